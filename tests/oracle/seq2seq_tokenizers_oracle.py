#!/usr/bin/env python3
"""Tokenizer oracle for the multilingual encoder-decoder families: mT5, Marian, mBART-50, NLLB, Pegasus.

Each tokenizer is built here the way its checkpoints are: SentencePiece models trained with
sentencepiece's own trainer (single thread, no shuffling: deterministic) on the multilingual corpus
(tests/data/tokenizer_corpus.json) under the layout each family uses (special ids, Unigram or BPE,
byte fallback), wrapped in transformers' own tokenizer class and saved with save_pretrained into
<out>/tokenizers/<name>/. Records (format: tokenizer_records.py):
  mt5_json / mt5_model            T5TokenizerFast over a byte-fallback Unigram (mT5's layout), from
                                  tokenizer.json / from spiece.model with the configs only
  marian                          MarianTokenizer (slow: SentencePiece itself): source.spm encodes,
                                  target.spm decodes, one joint vocab.json with >>xx<< codes
  marian_separate                 the same with separate_vocabs (target_vocab.json)
  mbart50_json / mbart50_model    MBart50TokenizerFast: fairseq offset, 52 language codes, <mask>
  nllb_json / nllb_model          NllbTokenizerFast over a SentencePiece BPE: 202 codes
  nllb_legacy_json                the same with legacy_behaviour=True (X </s> [src_lang])
  pegasus_json / pegasus_model    PegasusTokenizerFast: offset 103, <mask_1>, <mask_2>, <unk_N>
The "_model" directories hold the SentencePiece file with the saved configs but no tokenizer.json,
so transformers converts the model file on load, as it does for checkpoints published that way.
Language-aware records also hold encodings with each of several source languages and as target
text (tgt_lang; Marian's target model).
"""
import json
import os
import shutil
import sys
import tempfile

import hf_compat  # noqa: F401  (offline env, version record)

import sentencepiece as spm
from transformers import (AutoTokenizer, MarianTokenizer, MBart50TokenizerFast, NllbTokenizerFast,
                          PegasusTokenizerFast, T5TokenizerFast)

from tokenizer_records import copy_configs, oracle_start, record

COMMON = dict(num_threads=1, shuffle_input_sentence=False, input_sentence_size=0, minloglevel=2,
              hard_vocab_limit=False, character_coverage=0.9995)
# Special ids as each family's published model lays them out.
T5_LAYOUT = dict(pad_id=0, eos_id=1, unk_id=2, bos_id=-1)
FAIRSEQ_LAYOUT = dict(unk_id=0, bos_id=1, eos_id=2, pad_id=-1)

# Strings naming each family's own special and language tokens, encoded by every record here.
FAMILY_STRINGS = [
    "<mask_1> and <mask_2> are Pegasus masks, <unk_7> one of its unused tokens",
    "en_XX Hello ro_RO lume </s>", "eng_Latn Hello fra_Latn monde", "zho_Hans\u4f60\u597d", "de_DE<mask>x",
    ">>fra<< Hello world", ">>deu<< Guten Tag >>fra<< again", "text >>fra<< inside", ">>fra<<", ">>xyz<< unknown code",
    ">>fra<<\n>>deu<< two lines", "<extra_id_0> <extra_id_99> sentinels",
]
MULTILINGUAL_SOURCES = ["en_XX", "de_DE", "zh_CN", "ar_AR"]
MULTILINGUAL_TARGETS = ["ro_RO", "fr_XX"]
NLLB_SOURCES = ["eng_Latn", "deu_Latn", "zho_Hans", "arb_Arab"]
NLLB_TARGETS = ["fra_Latn", "ron_Latn"]


def train_spm(corpus, path, **options):
    with tempfile.TemporaryDirectory() as tmp:
        text = os.path.join(tmp, "corpus.txt")
        with open(text, "w", encoding="utf-8") as f:
            f.write("\n".join(t.replace("\n", " ") for t in corpus if t.strip()) + "\n")
        spm.SentencePieceTrainer.train(input=text, model_prefix=os.path.join(tmp, "m"), **COMMON, **options)
        shutil.copy(os.path.join(tmp, "m.model"), path)
    return path


def fresh_dir(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def model_only(saved, out, name, model_file):
    """The saved directory without tokenizer.json: transformers converts the model file on load."""
    d = fresh_dir(os.path.join(out, name))
    shutil.copy(os.path.join(saved, model_file), os.path.join(d, model_file))
    copy_configs(saved, d)
    return d


def language_encodes(tok, texts, sources, targets):
    """Ids of each text with each source language, and as target text with each target language."""
    out = []
    for code in sources:
        tok.src_lang = code
        for text in texts:
            out.append({"text": text, "options": {"src_lang": code}, "ids": tok(text)["input_ids"]})
    for code in targets:
        tok.tgt_lang = code
        for text in texts:
            out.append({"text": text, "options": {"target": True, "tgt_lang": code},
                        "ids": tok(text_target=text)["input_ids"]})
    return out


def record_mt5(out, corpus, long_text, strings, work):
    model = train_spm(corpus, os.path.join(work, "mt5.model"), model_type="unigram", vocab_size=3000,
                      byte_fallback=True, **T5_LAYOUT)
    saved = fresh_dir(os.path.join(out, "mt5_json"))
    T5TokenizerFast(vocab_file=model).save_pretrained(saved)
    with open(os.path.join(saved, "config.json"), "w") as f:
        json.dump({"model_type": "mt5"}, f)
    record("mt5_json", AutoTokenizer.from_pretrained(saved), saved, strings, long_text, out)
    d = model_only(saved, out, "mt5_model", "spiece.model")
    record("mt5_model", AutoTokenizer.from_pretrained(d), d, strings, long_text, out)


def record_marian(out, corpus, long_text, strings, work):
    # opus-mt's layout: two Unigram models, one joint vocab.json (</s> 0, <unk> 1, pieces, <pad> last)
    # that also lists the >>xx<< codes of multilingual targets.
    half = len(corpus) // 2
    source = train_spm(corpus[:half] + corpus, os.path.join(work, "source.spm"), model_type="unigram", vocab_size=1500)
    target = train_spm(corpus[half:] + corpus, os.path.join(work, "target.spm"), model_type="unigram", vocab_size=1800)
    vocab = {"</s>": 0, "<unk>": 1}
    for path in (source, target):
        sp = spm.SentencePieceProcessor(model_file=path)
        for i in range(sp.get_piece_size()):
            if not sp.is_control(i) and not sp.is_unknown(i):
                vocab.setdefault(sp.id_to_piece(i), len(vocab))
    for code in (">>fra<<", ">>deu<<", ">>ron<<"):
        vocab[code] = len(vocab)
    vocab["<pad>"] = len(vocab)
    vocab_path = os.path.join(work, "vocab.json")
    with open(vocab_path, "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    saved = fresh_dir(os.path.join(out, "marian"))
    MarianTokenizer(source, target, vocab_path, source_lang="en", target_lang="mul").save_pretrained(saved)
    tok = AutoTokenizer.from_pretrained(saved)
    encodes = [{"text": t, "options": {"target": True}, "ids": tok(text_target=t)["input_ids"]} for t in strings]
    codes = [k for k in vocab if k.startswith(">>") and k.endswith("<<")]
    record("marian", tok, saved, strings, long_text, out, encodes=encodes, language_codes=codes)

    # separate_vocabs (some opus-mt pairs): target.spm's pieces in their own target_vocab.json, which
    # encodes target text and decodes; no language codes.
    target_vocab = {"</s>": 0, "<unk>": 1}
    sp = spm.SentencePieceProcessor(model_file=target)
    for i in range(sp.get_piece_size()):
        if not sp.is_control(i) and not sp.is_unknown(i):
            target_vocab.setdefault(sp.id_to_piece(i), len(target_vocab))
    target_vocab["<pad>"] = len(target_vocab)
    target_vocab_path = os.path.join(work, "target_vocab.json")
    with open(target_vocab_path, "w", encoding="utf-8") as f:
        json.dump(target_vocab, f, ensure_ascii=False)
    separate = fresh_dir(os.path.join(out, "marian_separate"))
    MarianTokenizer(source, target, vocab_path, target_vocab_file=target_vocab_path, separate_vocabs=True,
                    source_lang="en", target_lang="de").save_pretrained(separate)
    tok = AutoTokenizer.from_pretrained(separate)
    encodes = [{"text": t, "options": {"target": True}, "ids": tok(text_target=t)["input_ids"]} for t in strings]
    record("marian_separate", tok, separate, strings, long_text, out, encodes=encodes)


def record_mbart50(out, corpus, long_text, strings, work):
    model = train_spm(corpus, os.path.join(work, "mbart50.model"), model_type="unigram", vocab_size=3000,
                      **FAIRSEQ_LAYOUT)
    saved = fresh_dir(os.path.join(out, "mbart50_json"))
    MBart50TokenizerFast(vocab_file=model, src_lang="en_XX", tgt_lang="ro_RO").save_pretrained(saved)
    for name, d in (("mbart50_json", saved), ("mbart50_model", model_only(saved, out, "mbart50_model",
                                                                          "sentencepiece.bpe.model"))):
        tok = AutoTokenizer.from_pretrained(d)
        codes = list(tok.lang_code_to_id)
        encodes = language_encodes(tok, strings[:60], MULTILINGUAL_SOURCES, MULTILINGUAL_TARGETS)
        tok = AutoTokenizer.from_pretrained(d)  # the saved default languages again
        record(name, tok, d, strings, long_text, out, encodes=encodes, language_codes=codes)


def record_nllb(out, corpus, long_text, strings, work):
    model = train_spm(corpus, os.path.join(work, "nllb.model"), model_type="bpe", vocab_size=3000, **FAIRSEQ_LAYOUT)
    saved = fresh_dir(os.path.join(out, "nllb_json"))
    NllbTokenizerFast(vocab_file=model, src_lang="eng_Latn", tgt_lang="fra_Latn").save_pretrained(saved)
    legacy = fresh_dir(os.path.join(out, "nllb_legacy_json"))
    NllbTokenizerFast(vocab_file=model, src_lang="eng_Latn", tgt_lang="fra_Latn",
                      legacy_behaviour=True).save_pretrained(legacy)
    for name, d in (("nllb_json", saved), ("nllb_legacy_json", legacy),
                    ("nllb_model", model_only(saved, out, "nllb_model", "sentencepiece.bpe.model"))):
        tok = AutoTokenizer.from_pretrained(d)
        codes = [t for t in tok.additional_special_tokens]
        encodes = language_encodes(tok, strings[:60], NLLB_SOURCES, NLLB_TARGETS)
        tok = AutoTokenizer.from_pretrained(d)
        record(name, tok, d, strings, long_text, out, encodes=encodes, language_codes=codes)


def record_pegasus(out, corpus, long_text, strings, work):
    model = train_spm(corpus, os.path.join(work, "pegasus.model"), model_type="unigram", vocab_size=3000,
                      pad_id=0, eos_id=1, unk_id=2, bos_id=-1)
    saved = fresh_dir(os.path.join(out, "pegasus_json"))
    PegasusTokenizerFast(vocab_file=model).save_pretrained(saved)
    record("pegasus_json", AutoTokenizer.from_pretrained(saved), saved, strings, long_text, out)
    d = model_only(saved, out, "pegasus_model", "spiece.model")
    record("pegasus_model", AutoTokenizer.from_pretrained(d), d, strings, long_text, out)


def main():
    out, corpus, long_text = oracle_start()
    strings = corpus + FAMILY_STRINGS
    with tempfile.TemporaryDirectory() as work:
        for build in (record_mt5, record_marian, record_mbart50, record_nllb, record_pegasus):
            build(out, corpus, long_text, strings, work)


if __name__ == "__main__":
    sys.exit(main())
