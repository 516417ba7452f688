"""Oracle step `oracle_published_configs`: the published configurations of four real checkpoints
(issue 30), full size with random weights, and what Hugging Face's generate() makes of them with
no request parameters but a cap on new tokens.

config.json and generation_config.json are written here as those repositories publish them: the
keys each file holds, with the values found in public sources (each cited below; nothing is
downloaded). What a file leaves out is transformers' class default, as from_pretrained fills it.
Weights are random (models_oracle.randomize, fixed seeds), so no tokenizer is needed: prompts are
ids. The engine test (tests/models/test_published_configs.cpp) checks that every key of the files
is read as HF reads it and that the engine generates what HF generated.

The one request parameter: max_new_tokens = NEW. The published max_length values (512, 200, 200,
64) with 4-8 beams on 74M-611M parameters would take HF and the engine tens of minutes per model
on a two-core CI machine (measured in the test's header comment); everything else (beams, length
penalty, early stopping, forced eos, bad_words_ids, renormalize_logits, decoder start) is the
published value. max_length itself is compared as a configuration value.

What it costs, measured at nice 19 on the two-core machine beside other builds: opus-mt-en-de
(74M) built and saved in 35 s and generated its two prompts in 9 s (306 s and 6 s under heavy
load); mbart-large-50-many-to-many-mmt (611M) in 289 s and 89 s. The CTest step builds
opus-mt-en-de only (tests/models/CMakeLists.txt); `--only NAME...` builds others, and the test checks
every model index.json lists.

Layout under --out/published/<name>/ (and published/index.json: {"built": [names]}):
  model/          config.json, generation_config.json (as published), model.safetensors (random)
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

# Helsinki-NLP/opus-mt-en-de. config.json: the copy of the repository's file quoted in the
# Xenova/opus-mt-en-de model notes (find_string '"vocab_size": 58101'), which also matches what
# transformers' convert_marian_to_pytorch.py writes (bad_words_ids [[pad]], max_length 512,
# num_beams from the decoder.yml's beam-size 4, decoder_start = pad, forced_eos = eos = 0,
# max_position_embeddings = dim-emb 512, scale_embedding, static positions).
# generation_config.json: the same generation keys as the hub's file, with renormalize_logits true
# as opus-mt generation configs carry it (the opus-mt-en-jap evidence record found with
# find_string '"renormalize_logits": true': forced_eos 0, bad word = pad, beam width 4).
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

# facebook/mbart-large-50-many-to-many-mmt. Shape and ids: PaddleNLP's copy of the checkpoint's
# configuration (find_string '"vocab_size": 250054': d_model 1024, 12+12 layers, 16 heads, ffn 4096,
# relu, max_position_embeddings 1024, scale_embedding, bos 0 / pad 1 / eos 2, decoder_start 2).
# Generation keys (num_beams 5, max_length 200, early_stopping, forced_eos 2) as fairseq's
# mBART-50 fine-tunes were converted (transformers' MBart config tests and the model card's
# generate example, which adds only forced_bos_token_id per request).
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

# facebook/nllb-200-distilled-600M. Shape: the NLLB/M2M100 release configs quoted in public parsers
# (find_string '"vocab_size": 256206': d_model 1024, 12+12 layers, 16 heads, ffn 4096, relu,
# max_position_embeddings 1024, scale_embedding, bos 0 / pad 1 / eos 2, decoder_start 2,
# tokenizer_class NllbTokenizer). Its generation config holds no beams: max_length 200 and the ids.
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

# google/pegasus-xsum. transformers' own Pegasus configuration (v4.0's configuration_pegasus.py,
# found with find_string '"summarization_xsum": {"length_penalty"'): DEFAULTS (vocab 96103, d_model
# 1024, 16+16 layers, 16 heads, ffn 4096, dropouts 0.1, pad 0, eos 1, pre-LN, final norms, static
# positions, scale_embedding, num_beams 8, relu) updated by task_specific_params
# ["summarization_xsum"] (length_penalty 0.6, max_length 64, max_position_embeddings 512), as
# convert_pegasus_tf_to_pytorch.py builds each fine-tuned checkpoint; decoder_start 0 and
# forced_eos 1 as the converted checkpoints carry them.
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
