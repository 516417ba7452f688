"""Oracle step `oracle_published_configs`: the published configurations of four real checkpoints
(issue 30), full size with random weights, and what Hugging Face's generate() makes of them with
no request parameters but a cap on new tokens.

config.json and generation_config.json are written here as close to those repositories' files as
public sources confirm; nothing is downloaded. The comment above each model says which values a cited
public copy confirms, which are transformers' class defaults or what its conversion scripts write, and
which are unverified (no public copy found with the search tools: find_string on the distinctive
values named there). What a file leaves out is transformers' class default, as from_pretrained fills
it. The test checks that every key is read as HF reads it; an unverified value still exercises that.
Weights are random (models_oracle.randomize, fixed seeds), so no tokenizer is needed: prompts are
ids. The engine test (tests/models/test_published_configs.cpp) checks that every key of the files
is read as HF reads it and that the engine generates what HF generated.

The one request parameter: max_new_tokens = NEW. The files' max_length values (512, 200, 200, 64)
with 4-8 beams on 74M-615M parameters would run up to 85x the decoder steps of NEW in HF and in the
engine (not measured); everything else (beams, length penalty, early stopping, forced eos,
bad_words_ids, renormalize_logits, decoder start) is the files' value. max_length itself is compared
as a configuration value.

What it costs: see tests/models/CMakeLists.txt (measured per model, oracle and engine test). The
CTest step builds all four; `--only NAME...` builds some, and the test checks every model
index.json lists.

Layout under --out/published/<name>/ (and published/index.json: {"built": [names]}):
  model/          config.json, generation_config.json (as written above), model.safetensors (random)
  records.json    {"prompts", "new", "hf": {"config": <HF's parsed config>, "generation": <HF's
                  parsed generation config>}, "outputs": [generated ids, without the decoder start]}
"""
import argparse
import json
import os
import shutil
import time

import hf_compat  # noqa: F401  (before generate())
import torch
from transformers import AutoConfig, AutoModelForSeq2SeqLM, GenerationConfig

from models_oracle import randomize

NEW = 6   # see the docstring: the one request parameter
PROMPT_LENGTHS = (9, 23)

# Helsinki-NLP/opus-mt-en-de.
# config.json, confirmed: the "key fields" of the en-de config.json quoted in the README of
# harisnae/multilingual-translator-offline (from Xenova/opus-mt-en-de, which re-saved it with
# transformers 4.34.0.dev0; find_string '"decoder_vocab_size": 58101'): _name_or_path, MarianMTModel,
# d_model 512, 6+6 layers, 8 heads, ffn 2048, max_length 512, max_position_embeddings 512, vocab and
# decoder vocab 58101, pad 58100, bos 0, eos 0, decoder_start 58100, num_beams 4,
# share_encoder_decoder_embeddings, scale_embedding, dropout 0.1, attention/activation dropout 0.0,
# swish, bad_words_ids [[58100]].
# From transformers' convert_marian_to_pytorch.py (find_string 'bad_words_ids=[[self.pad_token_id]]'),
# not seen in a copy of this file: forced_eos_token_id = eos 0, static_position_embeddings (no
# trained positions), normalize_embedding false, add_final_layer_norm false (the script's default).
# Unverified: the other keys (MarianConfig's defaults: add_bias_logits, classif_dropout, init_std,
# layerdrops, normalize_before, ...) and transformers_version 4.22.0.dev0.
# generation_config.json: no public copy of en-de's file found. Its keys are config.json's generation
# values (what transformers' GenerationConfig.from_model_config carries over). renormalize_logits
# true is backed only by an evidence record for another pair, Helsinki-NLP/opus-mt-en-jap (find_string
# '"renormalize_logits": true': forced_eos 0, bad word = pad, beam width 4, renormalize_logits
# true): unverified for en-de, as is transformers_version 4.32.0.dev0.
OPUS_MT_EN_DE = {
    "config": {
        "_name_or_path": "Helsinki-NLP/opus-mt-en-de", "activation_dropout": 0.0, "activation_function": "swish",
        "add_bias_logits": False, "add_final_layer_norm": False, "architectures": ["MarianMTModel"],
        "attention_dropout": 0.0, "bad_words_ids": [[58100]], "bos_token_id": 0, "classif_dropout": 0.0,
        "classifier_dropout": 0.0, "d_model": 512, "decoder_attention_heads": 8, "decoder_ffn_dim": 2048,
        "decoder_layerdrop": 0.0, "decoder_layers": 6, "decoder_start_token_id": 58100, "decoder_vocab_size": 58101,
        "dropout": 0.1, "encoder_attention_heads": 8, "encoder_ffn_dim": 2048, "encoder_layerdrop": 0.0,
        "encoder_layers": 6, "eos_token_id": 0, "forced_eos_token_id": 0, "init_std": 0.02,
        "is_encoder_decoder": True, "max_length": 512, "max_position_embeddings": 512, "model_type": "marian",
        "normalize_before": False, "normalize_embedding": False, "num_beams": 4, "num_hidden_layers": 6,
        "pad_token_id": 58100, "scale_embedding": True, "share_encoder_decoder_embeddings": True,
        "static_position_embeddings": True, "transformers_version": "4.22.0.dev0", "use_cache": True,
        "vocab_size": 58101,
    },
    "generation": {
        "bad_words_ids": [[58100]], "bos_token_id": 0, "decoder_start_token_id": 58100, "eos_token_id": 0,
        "forced_eos_token_id": 0, "max_length": 512, "num_beams": 4, "pad_token_id": 58100,
        "renormalize_logits": True, "transformers_version": "4.32.0.dev0",
    },
}

# facebook/mbart-large-50-many-to-many-mmt.
# Confirmed: PaddlePaddle/PaddleNLP paddlenlp/transformers/mbart/configuration.py,
# MBART_PRETRAINED_INIT_CONFIGURATION["mbart-large-50-many-to-many-mmt"] (find_string
# '"vocab_size": 250054'): vocab 250054, bos 0 / pad 1 / eos 2, decoder_start 2, d_model 1024, 12+12
# layers, 16 heads, ffn 4096, dropout 0.1, relu, attention and activation dropout 0.0,
# max_position_embeddings 1024, init_std 0.02, scale_embedding. transformers' mBART docs
# (docs/source/en/model_doc/mbart.md, find_string 'mbart-50-large-many-to-many'): this checkpoint
# starts the decoder with eos and the target language is forced per request (generate's
# forced_bos_token_id), so neither file forces one.
# From MBartConfig's class defaults: forced_eos_token_id 2.
# Unverified (no public copy of either file found; find_string '"tokenizer_class": "MBart50Tokenizer"',
# 'hf_models/mbart-50-large' and '"_name_or_path": "facebook/mbart-large-50' found none): num_beams 5,
# max_length 200, early_stopping true, _name_or_path, _num_labels, output_past, tokenizer_class,
# the BART-era keys (normalize_before, normalize_embedding, add_final_layer_norm,
# static_position_embeddings, which MBartConfig ignores), transformers_version, and the whole
# generation_config.json.
MBART_50_MMT = {
    "config": {
        "_name_or_path": "facebook/mbart-large-50-many-to-many-mmt", "_num_labels": 3, "activation_dropout": 0.0,
        "activation_function": "relu", "add_bias_logits": False, "add_final_layer_norm": True,
        "architectures": ["MBartForConditionalGeneration"], "attention_dropout": 0.0, "bos_token_id": 0,
        "classif_dropout": 0.0, "classifier_dropout": 0.0, "d_model": 1024, "decoder_attention_heads": 16,
        "decoder_ffn_dim": 4096, "decoder_layerdrop": 0.0, "decoder_layers": 12, "decoder_start_token_id": 2,
        "dropout": 0.1, "early_stopping": True, "encoder_attention_heads": 16, "encoder_ffn_dim": 4096,
        "encoder_layerdrop": 0.0, "encoder_layers": 12, "eos_token_id": 2, "forced_eos_token_id": 2,
        "init_std": 0.02, "is_encoder_decoder": True, "max_length": 200, "max_position_embeddings": 1024,
        "model_type": "mbart", "normalize_before": True, "normalize_embedding": True, "num_beams": 5,
        "num_hidden_layers": 12, "output_past": True, "pad_token_id": 1, "scale_embedding": True,
        "static_position_embeddings": False, "tokenizer_class": "MBart50Tokenizer",
        "transformers_version": "4.4.0.dev0", "use_cache": True, "vocab_size": 250054,
    },
    "generation": {
        "bos_token_id": 0, "decoder_start_token_id": 2, "early_stopping": True, "eos_token_id": 2,
        "forced_eos_token_id": 2, "max_length": 200, "num_beams": 5, "pad_token_id": 1,
        "transformers_version": "4.27.0.dev0",
    },
}

# facebook/nllb-200-distilled-600M.
# Confirmed (find_string '"vocab_size": 256206'): a Python test's stand-in for this checkpoint's
# config.json (_NLLB_CONFIG, read as "facebook/nllb-200-distilled-600M": m2m_100,
# M2M100ForConditionalGeneration, d_model 1024, 12+12 layers, 16 heads, max_position_embeddings
# 1024, vocab 256206, torch_dtype float32) and an NLLB release config quoted in a Swift test
# (testTheConfigurationReadsAnNLLBReleaseConfig: ffn 4096, relu, scale_embedding, bos 0 / pad 1 /
# eos 2, decoder_start 2). Neither names its repository in the search results.
# Unverified (no public copy of either file found): tokenizer_class NllbTokenizer in config.json
# (seen only in a tokenizer_config.json stand-in, find_string '"tokenizer_class": "NllbTokenizer"'),
# dropout 0.1 / attention_dropout 0.1 / activation_dropout 0.0 / layerdrops 0 / init_std,
# max_length 200 in both files, transformers_version, and that generation_config.json holds no
# beams (only max_length and the ids).
NLLB_600M = {
    "config": {
        "_name_or_path": "facebook/nllb-200-distilled-600M", "activation_dropout": 0.0,
        "activation_function": "relu", "architectures": ["M2M100ForConditionalGeneration"],
        "attention_dropout": 0.1, "bos_token_id": 0, "d_model": 1024, "decoder_attention_heads": 16,
        "decoder_ffn_dim": 4096, "decoder_layerdrop": 0, "decoder_layers": 12, "decoder_start_token_id": 2,
        "dropout": 0.1, "encoder_attention_heads": 16, "encoder_ffn_dim": 4096, "encoder_layerdrop": 0,
        "encoder_layers": 12, "eos_token_id": 2, "init_std": 0.02, "is_encoder_decoder": True, "max_length": 200,
        "max_position_embeddings": 1024, "model_type": "m2m_100", "num_hidden_layers": 12, "pad_token_id": 1,
        "scale_embedding": True, "tokenizer_class": "NllbTokenizer", "torch_dtype": "float32",
        "transformers_version": "4.21.0.dev0", "use_cache": True, "vocab_size": 256206,
    },
    "generation": {
        "bos_token_id": 0, "decoder_start_token_id": 2, "eos_token_id": 2, "max_length": 200, "pad_token_id": 1,
        "transformers_version": "4.27.0.dev0",
    },
}

# google/pegasus-xsum. No public copy of its config.json or generation_config.json found.
# From transformers' own Pegasus configuration (configuration_pegasus.py of v3.1-v4.0, find_string
# '"summarization_xsum": {"length_penalty"'): DEFAULTS (vocab 96103, d_model 1024, 16+16 layers, 16
# heads, ffn 4096, dropouts 0.1, pad 0, eos 1, pre-LN, final norms, static positions,
# scale_embedding, num_beams 8, relu) updated by task_specific_params["summarization_xsum"]
# (length_penalty 0.6, max_length 64, max_position_embeddings 512), as convert_pegasus_tf_to_pytorch.py
# builds each fine-tuned checkpoint.
# Conflicting: a vendored copy of google/pegasus-large's config.json (a load_config("pegasus-large")
# function, find_string '"vocab_size": 96103', transformers_version 4.11.0.dev0) lists
# task_specific_params.summarization_xsum with length_penalty 0.8, so pegasus-xsum's published
# length_penalty (0.6 here) is unverified. That copy confirms for pegasus-large the keys shared
# with this file: bos 0, decoder_start 0, forced_eos 1, force_bos_token_to_be_generated false,
# the DEFAULTS above; it has extra_pos_embeddings 1 where this file has 0 (ignored by transformers).
# Unverified: the rest, transformers_version values, and the whole generation_config.json.
PEGASUS_XSUM = {
    "config": {
        "_name_or_path": "google/pegasus-xsum", "activation_dropout": 0.1, "activation_function": "relu",
        "add_bias_logits": False, "add_final_layer_norm": True, "architectures": ["PegasusForConditionalGeneration"],
        "attention_dropout": 0.1, "bos_token_id": 0, "classif_dropout": 0.0, "classifier_dropout": 0.0,
        "d_model": 1024, "decoder_attention_heads": 16, "decoder_ffn_dim": 4096, "decoder_layerdrop": 0.0,
        "decoder_layers": 16, "decoder_start_token_id": 0, "dropout": 0.1, "encoder_attention_heads": 16,
        "encoder_ffn_dim": 4096, "encoder_layerdrop": 0.0, "encoder_layers": 16, "eos_token_id": 1,
        "extra_pos_embeddings": 0, "force_bos_token_to_be_generated": False, "forced_eos_token_id": 1,
        "init_std": 0.02, "is_encoder_decoder": True, "length_penalty": 0.6, "max_length": 64,
        "max_position_embeddings": 512, "model_type": "pegasus", "normalize_before": True,
        "normalize_embedding": False, "num_beams": 8, "num_hidden_layers": 16, "pad_token_id": 0,
        "scale_embedding": True, "static_position_embeddings": True, "transformers_version": "4.11.0.dev0",
        "use_cache": True, "vocab_size": 96103,
    },
    "generation": {
        "bos_token_id": 0, "decoder_start_token_id": 0, "eos_token_id": 1, "forced_eos_token_id": 1,
        "length_penalty": 0.6, "max_length": 64, "num_beams": 8, "pad_token_id": 0,
        "transformers_version": "4.27.0.dev0",
    },
}

PUBLISHED = {"opus_mt_en_de": OPUS_MT_EN_DE, "mbart_large_50_mmt": MBART_50_MMT, "nllb_200_distilled_600m": NLLB_600M,
             "pegasus_xsum": PEGASUS_XSUM}

# What the engine reads, as HF resolves it (the test compares its own reading to these).
CONFIG_KEYS = ["vocab_size", "d_model", "encoder_layers", "decoder_layers", "encoder_attention_heads",
               "decoder_attention_heads", "encoder_ffn_dim", "decoder_ffn_dim", "activation_function",
               "max_position_embeddings", "scale_embedding", "pad_token_id", "eos_token_id", "bos_token_id",
               "decoder_start_token_id", "tie_word_embeddings"]
GENERATION_KEYS = ["max_length", "num_beams", "length_penalty", "early_stopping", "forced_bos_token_id",
                   "forced_eos_token_id", "bad_words_ids", "renormalize_logits", "decoder_start_token_id",
                   "eos_token_id", "no_repeat_ngram_size", "min_length", "do_sample"]


# With randomize()'s tied unit-variance tables the residual stream is the input token's own (scaled)
# embedding and every decoder repeats one token (measured: opus-mt-en-de gave one id five times,
# then the forced eos; scaling the tables down instead left positions to dominate and every prompt
# gave the same ids), so beams, penalties and bans would decide nothing. Attention outputs and
# second feed-forward layers K times larger make the stream the layers' work; a random
# final_logits_bias spreads the scores, and Marian's pad, boosted, is the argmax wherever
# bad_words_ids does not ban it.
OUTPUT_SCALE = 100.0


def shape_weights(model, config, seed):
    randomize(model, seed)
    g = torch.Generator().manual_seed(seed + 3)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(("out_proj.weight", "fc2.weight")):
                p.mul_(OUTPUT_SCALE)
        if hasattr(model, "final_logits_bias"):
            model.final_logits_bias.copy_(0.5 * torch.randn(model.final_logits_bias.shape, generator=g))
            if config.model_type == "marian":
                model.final_logits_bias[0, config.pad_token_id] += 1000.0


def write_json(path, value):
    with open(path, "w") as f:
        json.dump(value, f, indent=2, sort_keys=True)


def build(out_root, name, seed):
    published = PUBLISHED[name]
    root = os.path.join(out_root, "published", name)
    mdir = os.path.join(root, "model")
    if os.path.isdir(root):
        shutil.rmtree(root)
    os.makedirs(mdir)
    write_json(os.path.join(mdir, "config.json"), published["config"])
    config = AutoConfig.from_pretrained(mdir)
    start = time.time()
    torch.manual_seed(seed)
    model = AutoModelForSeq2SeqLM.from_config(config).eval()
    shape_weights(model, config, seed)
    model.save_pretrained(mdir, safe_serialization=True)
    # save_pretrained rewrote both files in its own form: put the published ones back.
    write_json(os.path.join(mdir, "config.json"), published["config"])
    write_json(os.path.join(mdir, "generation_config.json"), published["generation"])
    built = time.time() - start
    del model   # before the reload: two 600M-parameter copies would double the step's memory
    model = AutoModelForSeq2SeqLM.from_pretrained(mdir, torch_dtype=torch.float32).eval()
    generation = GenerationConfig.from_pretrained(mdir)
    g = torch.Generator().manual_seed(seed + 1)
    vocab = config.vocab_size
    prompts = [(torch.randint(3, vocab - 1, (n,), generator=g).tolist() + [config.eos_token_id]) for n in PROMPT_LENGTHS]
    outputs = []
    start = time.time()
    for p in prompts:
        ids = torch.tensor([p])
        with torch.no_grad():
            seq = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW)[0].tolist()
        tokens = seq[1:]
        while tokens and tokens[-1] == generation.pad_token_id and generation.pad_token_id != generation.eos_token_id:
            tokens.pop()
        outputs.append(tokens)
    generated = time.time() - start
    params = sum(p.numel() for p in model.parameters())
    write_json(os.path.join(root, "records.json"), {
        "model_dir": "model", "prompts": prompts, "new": NEW, "outputs": outputs, "parameters": params,
        "hf": {"config": {k: getattr(config, k, None) for k in CONFIG_KEYS},
               "generation": {k: getattr(generation, k, None) for k in GENERATION_KEYS}},
        "published": published,
    })
    print(f"{name}: {params / 1e6:.0f}M parameters, built and saved in {built:.0f} s, "
          f"{len(prompts)} generate() calls in {generated:.0f} s", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--only", nargs="*", default=list(PUBLISHED))
    args = parser.parse_args()
    built = []
    for seed, name in enumerate(PUBLISHED):
        if name in args.only:
            build(args.out, name, 500 + seed)
            built.append(name)
    write_json(os.path.join(args.out, "published", "index.json"), {"built": built})


if __name__ == "__main__":
    main()
