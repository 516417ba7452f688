#!/usr/bin/env python3
"""Tokenizer oracle: Hugging Face's own tokenizers encode and decode the corpus.

Writes <out>/tokenizers/<name>.json for each tokenizer (format: tokenizer_records.py), and
<out>/tokenizers/split_stress.json: what HF's Split makes of one-megabyte inputs (SPLIT_STRESS).

Tokenizers:
  - byte-level BPEs trained here with HF's own `tokenizers` trainer under the exact pre-tokenizer,
    normalizer, decoder and post-processor settings of BLOOM, Llama 3 and Qwen2 (their published
    tokenizer.json files and transformers' converters), saved with save_pretrained into
    <out>/tokenizers/<name>/;
  - the real files in LORASCOPE_SHARED_TOKENIZERS, read in place (the oracle dir holds only symlinks
    to them): t5 (tokenizer.json, and spiece.model alone), bart (tokenizer.json, and vocab.json +
    merges.txt), gpt2, and Mistral's SentencePiece BPE models (mistral/tokenizer.model.v1 and .v3),
    each both as the tokenizer.json LlamaTokenizerFast writes for it and as tokenizer.model with
    the configs only (transformers converts it on load), under the legacy, add_prefix_space,
    add_bos_token and add_eos_token settings listed in MISTRAL_VARIANTS.
"""
import json
import os
import shutil
import sys

import hf_compat  # offline env, version record

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import (AutoTokenizer, BartTokenizerFast, BloomTokenizerFast, GPT2TokenizerFast, LlamaTokenizerFast,
                          PreTrainedTokenizerFast, Qwen2TokenizerFast, T5TokenizerFast)

from tokenizer_records import link_dir, oracle_start, record, shared_tokenizers

# BLOOM's tokenizer.json (bigscience/bloom): Split on this pattern (Isolated), then ByteLevel
# without its own regex; ByteLevel decoder and post-processor.
BLOOM_SPLIT = " ?[^(\\s|[.,!?…。，、।۔،])]+"
# Llama 3's and Qwen2's Split patterns, as their published tokenizer.json files and transformers'
# TikTokenConverter / Qwen2Converter write them: digits by threes, or one at a time.
LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")


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



def train_byte_level(corpus, pattern, special_tokens, vocab_size=3000):
    """A byte-level BPE trained on the corpus with Split(pattern) + ByteLevel(use_regex=False)."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=special_tokens,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(corpus * 3, trainer=trainer)
    return tok


def build_llama3_style(out_dir, corpus):
    # meta-llama/Llama-3.x tokenizer.json: no normalizer, BPE with ignore_merges, Split + ByteLevel,
    # ByteLevel decoder, post-processor ByteLevel then <|begin_of_text|> $A; the class is
    # PreTrainedTokenizerFast with clean_up_tokenization_spaces true.
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>", "<|start_header_id|>",
                "<|end_header_id|>", "<|eot_id|>"]
    tok = train_byte_level(corpus, LLAMA3_SPLIT, specials)
    tok.model.ignore_merges = True
    tok.decoder = decoders.ByteLevel(add_prefix_space=True, trim_offsets=True, use_regex=True)
    bos = tok.token_to_id("<|begin_of_text|>")
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(add_prefix_space=True, trim_offsets=False, use_regex=True),
        processors.TemplateProcessing(single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B:1",
                                      special_tokens=[("<|begin_of_text|>", bos)]),
    ])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|begin_of_text|>", eos_token="<|end_of_text|>",
                                   clean_up_tokenization_spaces=True)
    fast.save_pretrained(out_dir)
    return AutoTokenizer.from_pretrained(out_dir)


def build_qwen2_style(out_dir, corpus):
    # Qwen/Qwen2.5 tokenizer.json: NFC normalizer, Split + ByteLevel, ByteLevel decoder and
    # post-processor, no bos; Qwen2TokenizerFast with <|endoftext|> as pad and <|im_end|> as eos.
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok = train_byte_level(corpus, QWEN2_SPLIT, specials)
    tok.normalizer = normalizers.NFC()
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    fast = Qwen2TokenizerFast(tokenizer_object=tok, unk_token=None, bos_token=None, eos_token="<|im_end|>",
                              pad_token="<|endoftext|>", errors="replace", clean_up_tokenization_spaces=False)
    fast.save_pretrained(out_dir)
    return AutoTokenizer.from_pretrained(out_dir)


# name: (model file, LlamaTokenizerFast keyword arguments). Each is recorded twice: "<name>_json" (the
# directory save_pretrained writes, tokenizer.json included) and "<name>_model" (tokenizer.model
# with the saved configs only, which transformers converts on load).
MISTRAL_VARIANTS = {
    # What `LlamaTokenizerFast(vocab_file=..., legacy=False)` does in 4.46.3: add_prefix_space stays
    # None, so the converter writes Metaspace(prepend_scheme="never") and no Strip decoder.
    "mistral_v1": ("tokenizer.model.v1", dict(legacy=False)),
    "mistral_v1_legacy": ("tokenizer.model.v1", dict(legacy=True)),
    # add_prefix_space=True: Metaspace(first) (non-legacy) or Prepend + Replace (legacy), and Strip.
    "mistral_v1_prefix": ("tokenizer.model.v1", dict(legacy=False, add_prefix_space=True)),
    "mistral_v1_legacy_prefix": ("tokenizer.model.v1", dict(legacy=True, add_prefix_space=True)),
    # v3: 771 control and user-defined pieces; </s> appended too.
    "mistral_v3": ("tokenizer.model.v3", dict(legacy=False, add_eos_token=True)),
}


def record_mistral(out, shared, corpus, long_text):
    mistral = os.path.join(shared, "mistral")
    if not os.path.isdir(mistral):
        print(f"{mistral} is absent: the Mistral SentencePiece BPE records are not written")
        return
    for name, (model_file, kwargs) in MISTRAL_VARIANTS.items():
        saved = os.path.join(out, name + "_json")
        shutil.rmtree(saved, ignore_errors=True)
        LlamaTokenizerFast(vocab_file=os.path.join(mistral, model_file), **kwargs).save_pretrained(saved)
        # save_pretrained copied the model file; the record dir points at the shared one instead.
        link_dir(saved, {"tokenizer.model": os.path.join(mistral, model_file)})
        record(name + "_json", AutoTokenizer.from_pretrained(saved), saved, corpus, long_text, out)
        model_only = os.path.join(out, name + "_model")
        shutil.rmtree(model_only, ignore_errors=True)
        link_dir(model_only, {"tokenizer.model": os.path.join(mistral, model_file)})
        for config in ("tokenizer_config.json", "special_tokens_map.json"):
            shutil.copy(os.path.join(saved, config), os.path.join(model_only, config))
        record(name + "_model", AutoTokenizer.from_pretrained(model_only), model_only, corpus, long_text, out)
    # tokenizer.model alone: no class named anywhere, so LlamaTokenizerFast with its defaults (legacy).
    bare = os.path.join(out, "mistral_v1_bare")
    shutil.rmtree(bare, ignore_errors=True)
    link_dir(bare, {"tokenizer.model": os.path.join(mistral, "tokenizer.model.v1")})
    record("mistral_v1_bare", LlamaTokenizerFast.from_pretrained(bare), bare, corpus, long_text, out)


# One-megabyte inputs of one character class and of alternations (unit, repeats): what HF's own
# Split makes of them (piece count, first and last pieces) with the Llama 3 and Qwen2 patterns.
SPLIT_STRESS = [("a", 1 << 20), ("1", 1 << 20), (" ", 1 << 20), ("\n", 1 << 20), ("!", 1 << 20),
                ("a1 !\n", 1 << 18), ("'s", 1 << 19), (" \n", 1 << 19), ("\u00e9", 1 << 19), ("\U0001f600", 1 << 18),
                ("a  ", (1 << 20) // 3 + 1), ("x\r\n ", 1 << 18)]


def record_split_stress(out):
    patterns = {"llama3": pre_tokenizers.Split(Regex(LLAMA3_SPLIT), behavior="isolated"),
                "qwen2": pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated")}
    cases = []
    for unit, repeat in SPLIT_STRESS:
        text = unit * repeat
        case = {"unit": unit, "repeat": repeat, "pieces": {}}
        for name, pre in patterns.items():
            pieces = [p for p, _ in pre.pre_tokenize_str(text)]
            case["pieces"][name] = {"count": len(pieces), "first": pieces[:3], "last": pieces[-3:]}
        cases.append(case)
    with open(os.path.join(out, "split_stress.json"), "w", encoding="utf-8") as f:
        json.dump({"versions": hf_compat.versions(), "cases": cases}, f, ensure_ascii=False)
    print(f"split_stress: {len(cases)} one-megabyte inputs split by {len(patterns)} patterns")


def main():
    out, corpus, long_text = oracle_start()
    record_split_stress(out)

    for name, build in (("bloom_style", build_bloom_style), ("llama3_style", build_llama3_style),
                        ("qwen2_style", build_qwen2_style)):
        d = os.path.join(out, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        record(name, build(d, corpus), d, corpus, long_text, out)

    shared = shared_tokenizers()
    if not os.path.isdir(shared):
        print(f"shared tokenizer folder {shared} is absent: only the tokenizers trained here are recorded")
        return
    t5 = os.path.join(shared, "t5")
    record("t5", T5TokenizerFast.from_pretrained(t5), t5, corpus, long_text, out)

    # spiece.model alone: transformers converts it (T5Converter) the way our loader reads it.
    t5_spiece = os.path.join(out, "t5_spiece")
    link_dir(t5_spiece, {"spiece.model": os.path.join(t5, "spiece.model")})
    record("t5_spiece", T5TokenizerFast.from_pretrained(t5_spiece), t5_spiece, corpus, long_text, out)

    bart = os.path.join(shared, "bart")
    record("bart_json", BartTokenizerFast.from_pretrained(bart), bart, corpus, long_text, out)

    # vocab.json + merges.txt only (no tokenizer.json), with the config.json a BART checkpoint carries.
    bart_vm = os.path.join(out, "bart_vocab_merges")
    link_dir(bart_vm, {"vocab.json": os.path.join(bart, "vocab.json"), "merges.txt": os.path.join(bart, "merges.txt")})
    with open(os.path.join(bart_vm, "config.json"), "w") as f:
        json.dump({"model_type": "bart"}, f)
    record("bart_vocab_merges", BartTokenizerFast.from_pretrained(bart_vm), bart_vm, corpus, long_text, out)

    gpt2 = os.path.join(shared, "gpt2")
    record("gpt2", GPT2TokenizerFast.from_pretrained(gpt2), gpt2, corpus, long_text, out)

    record_mistral(out, shared, corpus, long_text)


if __name__ == "__main__":
    sys.exit(main())
