"""What the tokenizer oracles share: the corpus, the long input, and the record format.

A record (<out>/tokenizers/<name>.json) holds what a Hugging Face tokenizer does with the corpus
(tests/data/tokenizer_corpus.json) plus STRESS: ids with and without special tokens, tokens,
decodes with and without skip_special_tokens, decodes of fixed random id sequences, one
100,000-character input, and, for tokenizers with languages or a separate target side, the ids of
chosen strings encoded with a source language, as target text, or with a target language.
"""
import json
import os
import random

import hf_compat

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "data", "tokenizer_corpus.json")
LONG_CHARS = 100_000
RANDOM_SEQUENCES = 40

# Strings that stress the newer pre-tokenizers and normalizers: case-insensitive contractions
# (with the characters Unicode case folding maps onto s and k), digit runs of every length
# mod 3, newline and whitespace runs the regex alternatives split differently, CJK and emoji
# that byte fallback spells as bytes, and sequences NFC composes or reorders.
STRESS = [
    "I'M HERE, YOU'RE THERE, WE'VE GONE, HE'LL GO, SHE'D KNOW, IT'S, DON'T",
    "i'M y'ALL'D'VE 'Ll 'lL 'Re 'rE 'Ve 'vE 'S 'T 'D 'M",
    "'\u017f 'K '\u212a long s and Kelvin after an apostrophe",
    "'\n'x 'ss '1 '' 's's",
    "1 12 123 1234 12345 123456 1234567 12345678 123456789 1234567890",
    "a1b22c333d4444 x99999y \u0663\u0664\u0665\u0666 \u00b2\u00b3 \u2163\u2164",
    "line\nline\r\nline\rline\n\n\nline\r\r\n\n",
    "  \n  \n\t\n x  \n\ny \n",
    "word   \n   word\t\t\nword \u3000\nend",
    "   leading and inner    and trailing   ",
    "!!!abc ...def ,ghi 'jkl \"mno (pqr) [stu]\n\n",
    "?!\n\n\n  ...\r\n\r\nx",
    "\u4f60\u597d\u4e16\u754c\uff01\u3053\u3093\u306b\u3061\u306f \uc548\ub155\ud558\uc138\uc694 \u0928\u092e\u0938\u094d\u0924\u0947",
    "\U0001f600\U0001f603 \U0001f468\u200d\U0001f469\u200d\U0001f467 \U0001f1ef\U0001f1f5 \u2764\ufe0f x\U0001f60ay",
    "\U00020000\U0002a6d6\U0001d518\U0001d52b \U0001f9d1\u200d\U0001f91d\u200d\U0001f9d1",
    "e\u0301 a\u0308 o\u0302\u0323 \u1100\u1161\u11a8 A\u030a \u212b \u2126 \u0958",
    "q\u0307\u0323 \u1e0b\u0323 \u0041\u0327\u0301 \ufb01 \u00bd \u2460",
    "\u20ac\u00a3\u00a5\u20b9 \u2022 \u00b7 \u2014 \u2026 \u00ab\u00bb",
    "tab\tseparated\tvalues\t1\t22\t333",
    "x" * 40 + " " + "9" * 40 + " " + "\U0001f600" * 10,
]


def oracle_start():
    """The oracle scripts' common start: --out, its tokenizers/ directory, the corpus, the long input."""
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    out = os.path.join(parser.parse_args().out, "tokenizers")
    os.makedirs(out, exist_ok=True)
    corpus = load_corpus()
    return out, corpus, long_input(corpus)


def load_corpus():
    with open(CORPUS, encoding="utf-8") as f:
        return json.load(f)


def long_input(corpus):
    """100,000 code points: the corpus joined by separators that vary deterministically."""
    rng = random.Random(1234)
    seps = [" ", "\n", "  ", "\t", "", " \n", "\n\n"]
    parts, total = [], 0
    while total < LONG_CHARS:
        s = corpus[rng.randrange(len(corpus))] + seps[rng.randrange(len(seps))]
        parts.append(s)
        total += len(s)
    text = "".join(parts)[:LONG_CHARS]
    assert len(text) == LONG_CHARS
    return text


def link_dir(out_dir, files):
    """A directory of symlinks (real files are read in place, never copied)."""
    os.makedirs(out_dir, exist_ok=True)
    for name, target in files.items():
        path = os.path.join(out_dir, name)
        if os.path.lexists(path):
            os.remove(path)
        os.symlink(target, path)


def copy_configs(from_dir, to_dir, names=("tokenizer_config.json", "special_tokens_map.json")):
    os.makedirs(to_dir, exist_ok=True)
    for name in names:
        src = os.path.join(from_dir, name)
        if os.path.exists(src):
            with open(src, "rb") as f, open(os.path.join(to_dir, name), "wb") as g:
                g.write(f.read())


def special_ids(tok):
    def tid(t):
        return None if t is None else tok.convert_tokens_to_ids(t)
    return {"bos": tid(tok.bos_token), "eos": tid(tok.eos_token), "pad": tid(tok.pad_token), "unk": tid(tok.unk_token)}


def edge_sequences(tok):
    """Id sequences at the edges of the decoders: byte-fallback runs that are whole characters, cut
    short, followed by invalid bytes, interrupted by a special token (kept or skipped), a space byte
    or a lone U+2581 first (Strip / Metaspace's first token), and pieces with U+2581 inside."""
    vocab = tok.get_vocab()
    ids = {t: vocab[t] for t in ("<0xE2>", "<0x82>", "<0xAC>", "<0xFF>", "<0x41>", "<0x20>", "<0xF0>", "<0x9F>",
                                 "<0x98>", "<0x80>", "\u2581", "\u2581a", "\u2581\u2581", "a") if t in vocab}
    inner = sorted(t for t in vocab if "\u2581" in t[1:])[:3]
    specials = [i for i in (tok.eos_token_id, tok.bos_token_id) if i is not None]
    seqs = []

    def add(*names_or_ids):
        seq = [ids.get(x) if isinstance(x, str) else x for x in names_or_ids]
        if all(i is not None for i in seq) and seq:
            seqs.append(seq)

    add("<0xE2>", "<0x82>", "<0xAC>")
    add("<0xE2>", "<0x82>", "<0xAC>", "\u2581a")
    add("<0xE2>", "<0x82>", "\u2581a", "<0xAC>")
    add("<0xE2>", "<0x82>", "<0xAC>", "<0xFF>", "<0x41>")
    add("<0xF0>", "<0x9F>", "<0x98>", "<0x80>", "<0xE2>", "<0x82>", "<0xAC>")
    add("<0x20>", "\u2581\u2581", "a")
    add("<0x41>")
    add("\u2581", "\u2581a")
    add("\u2581\u2581", "a", "\u2581\u2581")
    for s in specials:
        add("<0xE2>", s, "<0x82>", "<0xAC>")
        add(s, "\u2581a", "<0x20>")
        add(s, "\u2581", "a")
    for t in inner:
        add(vocab[t], "\u2581a")
        add("a", vocab[t])
    return seqs


def record(name, tok, tok_dir, corpus, long_text, out_dir, encodes=None, language_codes=None, extra=None):
    """Writes <out_dir>/<name>.json. encodes: [{"text", "options", "ids"}], ids HF produced for the
    text under those options (a source language, target text)."""
    rng = random.Random(sum(map(ord, name)))  # fixed per tokenizer, unlike hash()
    entries = []
    for text in corpus + STRESS:
        ids = tok.encode(text)
        entries.append({
            "text": text,
            "ids": ids,
            "ids_no_special": tok.encode(text, add_special_tokens=False),
            "tokens": tok.convert_ids_to_tokens(ids),
            "decode": tok.decode(ids),
            "decode_skip": tok.decode(ids, skip_special_tokens=True),
        })
    long_ids = tok.encode(long_text)
    size = len(tok)
    random_sequences = []
    sequences = [[rng.randrange(size) for _ in range(rng.randrange(1, 24))] for _ in range(RANDOM_SEQUENCES)]
    for ids in sequences + edge_sequences(tok):
        random_sequences.append({"ids": ids, "decode": tok.decode(ids),
                                 "decode_skip": tok.decode(ids, skip_special_tokens=True)})
    data = {
        "versions": hf_compat.versions(),
        "class": type(tok).__name__,
        "dir": tok_dir,
        "vocab_size": size,
        "special_ids": special_ids(tok),
        "clean_up_tokenization_spaces": tok.clean_up_tokenization_spaces,
        "entries": entries,
        "long": {"text": long_text, "ids": long_ids, "decode": tok.decode(long_ids),
                 "decode_skip": tok.decode(long_ids, skip_special_tokens=True)},
        "random": random_sequences,
        "encodes": encodes or [],
    }
    if language_codes is not None:
        data["language_codes"] = {code: tok.convert_tokens_to_ids(code) for code in language_codes}
    if extra:
        data.update(extra)
    with open(os.path.join(out_dir, name + ".json"), "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False)
    print(f"{name}: {type(tok).__name__} from {tok_dir}: {len(entries)} strings, long input {len(long_ids)} ids, "
          f"{len(encodes or [])} encodes with options")


def shared_tokenizers():
    shared = os.environ.get("LORASCOPE_SHARED_TOKENIZERS", os.path.join(HERE, "..", "..", "..", "shared", "tokenizers"))
    return os.path.abspath(shared)
