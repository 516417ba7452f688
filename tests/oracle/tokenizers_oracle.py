#!/usr/bin/env python3
"""Tokenizer oracle: Hugging Face's own tokenizers encode and decode the corpus.

Writes <out>/tokenizers/<name>.json for each tokenizer: ids with and without special tokens,
the tokens, decodes with and without skip_special_tokens, decodes of fixed random id sequences,
and the same for one 100,000-character input built deterministically from the corpus.

Tokenizers: the real files in LORASCOPE_SHARED_TOKENIZERS (t5, bart via tokenizer.json and via
vocab.json + merges.txt, gpt2), read in place (the oracle dir holds only symlinks to them), and
a BLOOM-style byte-level BPE trained here with BLOOM's exact pre-tokenizer, decoder and
post-processor, saved with save_pretrained into <out>/tokenizers/bloom_style/.
"""
import argparse
import json
import os
import random
import sys

import hf_compat  # noqa: F401  (offline env, version record)

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import (BartTokenizerFast, BloomTokenizerFast, GPT2TokenizerFast, T5TokenizerFast)

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "data", "tokenizer_corpus.json")
LONG_CHARS = 100_000
RANDOM_SEQUENCES = 40

# BLOOM's tokenizer.json (bigscience/bloom): Split on this pattern (Isolated), then ByteLevel
# without its own regex; ByteLevel decoder and post-processor.
BLOOM_SPLIT = " ?[^(\\s|[.,!?…。，、।۔،])]+"


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
    # Never end inside a surrogate-free but split grapheme: code points are what we count.
    assert len(text) == LONG_CHARS
    return text


def build_bloom_style(out_dir, corpus):
    tok = Tokenizer(models.BPE())
    tok.normalizer = None
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(BLOOM_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel(add_prefix_space=True, trim_offsets=True, use_regex=False)
    tok.post_processor = processors.ByteLevel(add_prefix_space=True, trim_offsets=False, use_regex=False)
    trainer = trainers.BpeTrainer(vocab_size=2000, special_tokens=["<unk>", "<s>", "</s>", "<pad>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    # A fixed training text: the corpus three times over (the trainer is deterministic).
    tok.train_from_iterator(corpus * 3, trainer=trainer)
    fast = BloomTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>",
                              pad_token="<pad>", padding_side="left")
    os.makedirs(out_dir, exist_ok=True)
    fast.save_pretrained(out_dir)
    # The Python bindings do not carry use_regex=False into the saved decoder/post-processor;
    # BLOOM's file has it, so write it as BLOOM does (it changes no ids or text).
    path = os.path.join(out_dir, "tokenizer.json")
    with open(path, encoding="utf-8") as f:
        config = json.load(f)
    config["decoder"]["use_regex"] = False
    config["post_processor"]["use_regex"] = False
    with open(path, "w", encoding="utf-8") as f:
        json.dump(config, f, ensure_ascii=False, indent=2)
    return BloomTokenizerFast.from_pretrained(out_dir)


def link_dir(out_dir, files):
    os.makedirs(out_dir, exist_ok=True)
    for name, target in files.items():
        path = os.path.join(out_dir, name)
        if os.path.lexists(path):
            os.remove(path)
        os.symlink(target, path)


def special_ids(tok):
    def tid(t):
        return None if t is None else tok.convert_tokens_to_ids(t)
    return {"bos": tid(tok.bos_token), "eos": tid(tok.eos_token), "pad": tid(tok.pad_token), "unk": tid(tok.unk_token)}


def record(name, tok, tok_dir, corpus, long_text, out_path):
    rng = random.Random(sum(map(ord, name)))  # fixed per tokenizer, unlike hash()
    entries = []
    for text in corpus:
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
    for _ in range(RANDOM_SEQUENCES):
        ids = [rng.randrange(size) for _ in range(rng.randrange(1, 24))]
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
    }
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False)
    print(f"{name}: {type(tok).__name__} from {tok_dir}: {len(entries)} strings, long input {len(long_ids)} ids")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    out = os.path.join(args.out, "tokenizers")
    os.makedirs(out, exist_ok=True)
    with open(CORPUS, encoding="utf-8") as f:
        corpus = json.load(f)
    long_text = long_input(corpus)

    bloom_dir = os.path.join(out, "bloom_style")
    record("bloom_style", build_bloom_style(bloom_dir, corpus), bloom_dir, corpus, long_text,
           os.path.join(out, "bloom_style.json"))

    shared = os.environ.get("LORASCOPE_SHARED_TOKENIZERS", os.path.join(HERE, "..", "..", "..", "shared", "tokenizers"))
    shared = os.path.abspath(shared)
    if not os.path.isdir(shared):
        print(f"shared tokenizer folder {shared} is absent: only the BLOOM-style tokenizer is recorded")
        return
    t5 = os.path.join(shared, "t5")
    record("t5", T5TokenizerFast.from_pretrained(t5), t5, corpus, long_text, os.path.join(out, "t5.json"))

    # spiece.model alone: transformers converts it (T5Converter) the way our loader reads it.
    t5_spiece = os.path.join(out, "t5_spiece")
    link_dir(t5_spiece, {"spiece.model": os.path.join(t5, "spiece.model")})
    record("t5_spiece", T5TokenizerFast.from_pretrained(t5_spiece), t5_spiece, corpus, long_text,
           os.path.join(out, "t5_spiece.json"))

    bart = os.path.join(shared, "bart")
    record("bart_json", BartTokenizerFast.from_pretrained(bart), bart, corpus, long_text,
           os.path.join(out, "bart_json.json"))

    # vocab.json + merges.txt only (no tokenizer.json), with the config.json a BART checkpoint carries.
    bart_vm = os.path.join(out, "bart_vocab_merges")
    link_dir(bart_vm, {"vocab.json": os.path.join(bart, "vocab.json"), "merges.txt": os.path.join(bart, "merges.txt")})
    with open(os.path.join(bart_vm, "config.json"), "w") as f:
        json.dump({"model_type": "bart"}, f)
    record("bart_vocab_merges", BartTokenizerFast.from_pretrained(bart_vm), bart_vm, corpus, long_text,
           os.path.join(out, "bart_vocab_merges.json"))

    gpt2 = os.path.join(shared, "gpt2")
    record("gpt2", GPT2TokenizerFast.from_pretrained(gpt2), gpt2, corpus, long_text, os.path.join(out, "gpt2.json"))


if __name__ == "__main__":
    sys.exit(main())
