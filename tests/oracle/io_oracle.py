"""Oracle for checkpoint and adapter I/O: what Hugging Face writes and how it reads it back.

Writes under <out>/io/:
  models/<name>/            save_pretrained() of tiny random models (F32, F16, BF16, sharded,
                            saved from the bare base class so tensor names lack the task prefix)
  models/<name>.json        per state_dict name (as the task class sees it after from_pretrained):
                            shape and sha256 of the float32 values; per stored tensor (as named in
                            the file): dtype, shape, sha256 of the stored bytes
  mixed_dtypes.safetensors  every dtype safetensors.torch writes, with its record
  configs/<name>/config.json and configs/<name>.json: HF's config.to_dict() and the generation
                            config a model would use, for defaults, aliases and derived fields
  tokenizers.json           HF's vocabulary size and special ids of the shared real tokenizers
  adapters/<name>/          PEFT save_pretrained() adapters (non-zero lora_B) and their records:
                            rank and scaling per adapted module, PEFT's target decision for every
                            module of the base model, sha256 of lora_A/lora_B
Everything is built from configs with fixed seeds; nothing is downloaded.
"""
import argparse
import hashlib
import json
import os
import shutil

import hf_compat  # noqa: F401  (offline env + torch 1.13 shims) must come first

import torch
from safetensors import safe_open
from safetensors.torch import save_file
from transformers import (AutoConfig, BartConfig, BartForConditionalGeneration, BartModel, BloomConfig,
                          BloomForCausalLM, BloomModel, GenerationConfig, LlamaConfig, LlamaForCausalLM,
                          MistralConfig, MistralForCausalLM, MistralModel, Qwen2Config, Qwen2ForCausalLM,
                          T5Config, T5ForConditionalGeneration)


def sha(t):
    t = t.detach().contiguous().cpu()
    if t.dtype == torch.bfloat16:
        raw = t.view(torch.int16).numpy().tobytes()
    else:
        raw = t.numpy().tobytes()
    return hashlib.sha256(raw).hexdigest()


DTYPE_NAMES = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
               torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
               torch.uint8: "U8", torch.bool: "BOOL"}


def tensor_record(t):
    rec = {"dtype": DTYPE_NAMES[t.dtype], "shape": list(t.shape), "sha256_raw": sha(t)}
    if t.is_floating_point():
        rec["sha256_f32"] = sha(t.float())
    return rec


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True)


def generation_dict(directory, config):
    try:
        g = GenerationConfig.from_pretrained(directory)
    except OSError:
        g = GenerationConfig.from_model_config(config)
    return g.to_dict()


def tiny_configs():
    t5 = T5Config(vocab_size=96, d_model=16, d_kv=4, num_heads=2, d_ff=40, num_layers=2,
                  num_decoder_layers=3, decoder_start_token_id=0)
    t5_gated = T5Config(vocab_size=96, d_model=16, d_kv=6, num_heads=3, d_ff=24, num_layers=2,
                        feed_forward_proj="gated-gelu", tie_word_embeddings=False, decoder_start_token_id=0)
    bart = BartConfig(vocab_size=96, d_model=16, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
                      decoder_attention_heads=4, encoder_ffn_dim=24, decoder_ffn_dim=28,
                      max_position_embeddings=64, scale_embedding=True)
    bloom = BloomConfig(vocab_size=96, hidden_size=16, n_layer=2, n_head=4)
    return t5, t5_gated, bart, bloom


def tiny_llama_configs():
    llama = LlamaConfig(vocab_size=96, hidden_size=16, intermediate_size=24, num_hidden_layers=2,
                        num_attention_heads=4, num_key_value_heads=2, attention_bias=True)
    mistral = MistralConfig(vocab_size=96, hidden_size=16, intermediate_size=24, num_hidden_layers=2,
                            num_attention_heads=4, num_key_value_heads=1, sliding_window=8)
    qwen2 = Qwen2Config(vocab_size=96, hidden_size=16, intermediate_size=24, num_hidden_layers=2,
                        num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True)
    return llama, mistral, qwen2


def save_model(root, name, model, task_class, records, **save_kwargs):
    directory = os.path.join(root, name)
    model.save_pretrained(directory, safe_serialization=True, **save_kwargs)
    # Records use the names the task class sees, so prefix and tie resolution are checked too.
    loaded = task_class.from_pretrained(directory, torch_dtype=model.dtype)
    state = loaded.state_dict()
    # What is stored, read back with the safetensors library itself (T5 keeps "wo" in float32
    # inside the model even when the file holds float16, so the state dict cannot say this).
    stored = {}
    for f in sorted(os.listdir(directory)):
        if f.endswith(".safetensors"):
            with safe_open(os.path.join(directory, f), framework="pt") as handle:
                for key in handle.keys():
                    stored[key] = tensor_record(handle.get_tensor(key))
    file_keys = set(stored)

    def in_file(key):
        return any(k in file_keys for k in (key, key.split(".", 1)[1] if "." in key else key))

    # A key neither stored (under any prefix) nor sharing storage with a stored one was
    # initialised by HF itself (BART's final_logits_bias when saved from BartModel).
    stored_ptrs = {v.data_ptr() for k, v in state.items() if in_file(k)}
    absent = sorted(k for k, v in state.items() if not in_file(k) and v.data_ptr() not in stored_ptrs)
    total = 0.0
    for f in sorted(os.listdir(directory)):
        if f.endswith(".safetensors"):
            with safe_open(os.path.join(directory, f), framework="pt") as handle:
                for key in handle.keys():
                    t = handle.get_tensor(key)
                    if t.is_floating_point():
                        total += t.double().sum().item()
    rec = {"versions": hf_compat.versions(), "model_type": loaded.config.model_type,
           "float_sum": total,
           "absent_from_file": absent, "file_tensors": stored,
           "tensors": {k: tensor_record(v) for k, v in state.items()},
           "tie_word_embeddings": loaded.config.tie_word_embeddings}
    write_json(directory + ".json", rec)
    records.append(name)


def make_models(out):
    root = os.path.join(out, "models")
    os.makedirs(root, exist_ok=True)
    t5, t5_gated, bart, bloom = tiny_configs()
    names = []
    torch.manual_seed(1234)
    save_model(root, "t5_f32", T5ForConditionalGeneration(t5), T5ForConditionalGeneration, names)
    save_model(root, "t5_gated_f32", T5ForConditionalGeneration(t5_gated), T5ForConditionalGeneration, names)
    save_model(root, "bart_f32", BartForConditionalGeneration(bart), BartForConditionalGeneration, names)
    save_model(root, "bloom_f32", BloomForCausalLM(bloom), BloomForCausalLM, names)
    save_model(root, "t5_f16", T5ForConditionalGeneration(t5).half(), T5ForConditionalGeneration, names)
    save_model(root, "bart_bf16", BartForConditionalGeneration(bart).to(torch.bfloat16),
               BartForConditionalGeneration, names)
    save_model(root, "bloom_bf16_sharded", BloomForCausalLM(bloom).to(torch.bfloat16), BloomForCausalLM, names,
               max_shard_size="6KB")
    save_model(root, "t5_sharded", T5ForConditionalGeneration(t5_gated), T5ForConditionalGeneration, names,
               max_shard_size="10KB")
    # Bare base classes: no "model." / "transformer." prefix, no lm_head in the file.
    save_model(root, "bart_base_class", BartModel(bart), BartForConditionalGeneration, names)
    save_model(root, "bloom_base_class", BloomModel(bloom), BloomForCausalLM, names)
    llama, mistral, qwen2 = tiny_llama_configs()
    save_model(root, "llama_f32", LlamaForCausalLM(llama), LlamaForCausalLM, names)
    save_model(root, "mistral_bf16", MistralForCausalLM(mistral).to(torch.bfloat16), MistralForCausalLM, names)
    save_model(root, "qwen2_tied_f32", Qwen2ForCausalLM(qwen2), Qwen2ForCausalLM, names)
    save_model(root, "mistral_base_class", MistralModel(mistral), MistralForCausalLM, names)
    write_json(os.path.join(root, "index.json"), {"models": names})


def make_mixed(out):
    g = torch.Generator().manual_seed(7)
    base = torch.randn(3, 5, generator=g)
    tensors = {
        "f64": base.double(), "f32": base, "f16": base.half(), "bf16": base.to(torch.bfloat16),
        "i64": torch.arange(-6, 6, dtype=torch.int64).reshape(2, 6), "i32": torch.arange(7, dtype=torch.int32),
        "i16": torch.arange(-3, 3, dtype=torch.int16), "i8": torch.arange(-4, 4, dtype=torch.int8),
        "u8": torch.arange(0, 250, 10, dtype=torch.uint8), "bool": torch.tensor([True, False, True]),
        "scalar": torch.tensor(2.5), "empty": torch.zeros(0, 4),
    }
    path = os.path.join(out, "mixed_dtypes.safetensors")
    save_file(tensors, path, metadata={"format": "pt", "note": "io oracle"})
    write_json(path + ".json", {"versions": hf_compat.versions(),
                                "tensors": {k: tensor_record(v) for k, v in tensors.items()}})


def config_cases():
    return {
        "t5_defaults": {"model_type": "t5"},
        "t5_gated_derived": {"model_type": "t5", "feed_forward_proj": "gated-gelu", "num_layers": 3,
                             "d_model": 32, "d_kv": 12, "num_heads": 4, "tie_word_embeddings": False},
        "t5_gated_silu": {"model_type": "t5", "feed_forward_proj": "gated-silu", "num_layers": 2,
                          "num_decoder_layers": 5},
        "t5_aliases": {"model_type": "t5", "hidden_size": 48, "num_attention_heads": 3, "num_hidden_layers": 4,
                       "head_dim": 16, "d_model": 8},
        "t5_saved_fields": {"model_type": "t5", "feed_forward_proj": "gated-gelu", "dense_act_fn": "gelu_new",
                            "is_gated_act": True, "decoder_start_token_id": 0, "scale_decoder_outputs": False},
        "bart_defaults": {"model_type": "bart"},
        "bart_fairseq_keys": {"model_type": "bart", "scale_embedding": True, "normalize_before": True,
                              "add_final_layer_norm": True, "force_bos_token_to_be_generated": True,
                              "activation_function": "relu", "d_model": 64, "encoder_attention_heads": 4,
                              "decoder_attention_heads": 8},
        "bart_null_forced_eos": {"model_type": "bart", "forced_eos_token_id": None, "forced_bos_token_id": 0},
        "bart_aliases": {"model_type": "bart", "hidden_size": 32, "num_attention_heads": 2},
        # Issue 30's model types: each class's own defaults (and Marian's separate vocabularies).
        "mt5_defaults": {"model_type": "mt5"},
        "marian_defaults": {"model_type": "marian"},
        "marian_separate_vocab": {"model_type": "marian", "decoder_vocab_size": 500,
                                  "share_encoder_decoder_embeddings": False},
        "mbart_defaults": {"model_type": "mbart"},
        "m2m_100_defaults": {"model_type": "m2m_100"},
        "pegasus_defaults": {"model_type": "pegasus"},
        "bloom_defaults": {"model_type": "bloom"},
        "bloom_aliases": {"model_type": "bloom", "n_embed": 48, "num_hidden_layers": 5, "num_attention_heads": 6,
                          "n_layer": 2, "n_head": 8},
        "bloom_canonical": {"model_type": "bloom", "hidden_size": 32, "n_layer": 3, "n_head": 4,
                            "apply_residual_connection_post_layernorm": True, "pad_token_id": 3,
                            "layer_norm_epsilon": 1e-6, "tie_word_embeddings": False},
        "bloom_generation_keys": {"model_type": "bloom", "max_length": 77, "do_sample": True, "top_k": 5,
                                  "eos_token_id": 2, "repetition_penalty": 1.3},
        "llama_defaults": {"model_type": "llama"},
        "llama_gqa_head_dim": {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 8,
                               "num_key_value_heads": 2, "head_dim": 16, "attention_bias": True, "mlp_bias": True,
                               "tie_word_embeddings": True, "pad_token_id": 0},
        "llama_null_kv_heads": {"model_type": "llama", "num_attention_heads": 4, "num_key_value_heads": None,
                                "eos_token_id": [128001, 128008, 128009], "bos_token_id": 128000},
        "llama_rope_type_alias": {"model_type": "llama", "rope_scaling": {"type": "linear", "factor": 2.0}},
        "llama3_rope": {"model_type": "llama", "max_position_embeddings": 131072, "rope_theta": 500000.0,
                        "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                         "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}},
        "mistral_defaults": {"model_type": "mistral"},
        "mistral_null_window": {"model_type": "mistral", "sliding_window": None, "num_key_value_heads": None,
                                "head_dim": 0, "rope_scaling": {"rope_type": "linear", "factor": 4.0}},
        "qwen2_defaults": {"model_type": "qwen2"},
        "qwen2_window": {"model_type": "qwen2", "use_sliding_window": True, "sliding_window": 128,
                         "max_window_layers": 3, "num_key_value_heads": 2, "tie_word_embeddings": True,
                         "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
                         "bos_token_id": 151643, "eos_token_id": 151645},
        "qwen2_window_unused": {"model_type": "qwen2", "use_sliding_window": False, "sliding_window": 64},
    }


GENERATION_FILES = {
    "bloom_defaults": {"eos_token_id": [2, 5], "do_sample": True, "temperature": 0.7, "top_k": 11,
                       "top_p": 0.9, "max_new_tokens": 33, "repetition_penalty": 1.1, "no_repeat_ngram_size": 3},
}


def make_configs(out):
    root = os.path.join(out, "configs")
    os.makedirs(root, exist_ok=True)
    for name, raw in config_cases().items():
        directory = os.path.join(root, name)
        os.makedirs(directory, exist_ok=True)
        write_json(os.path.join(directory, "config.json"), raw)
        if name in GENERATION_FILES:
            write_json(os.path.join(directory, "generation_config.json"), GENERATION_FILES[name])
        config = AutoConfig.from_pretrained(directory)
        write_json(directory + ".json", {"versions": hf_compat.versions(), "config": config.to_dict(),
                                         "generation": generation_dict(directory, config)})
    # And the configs HF itself wrote next to the saved models.
    models = os.path.join(out, "models")
    for name in json.load(open(os.path.join(models, "index.json")))["models"]:
        directory = os.path.join(models, name)
        config = AutoConfig.from_pretrained(directory)
        write_json(os.path.join(root, "saved_" + name + ".json"),
                   {"versions": hf_compat.versions(), "directory": directory, "config": config.to_dict(),
                    "generation": generation_dict(directory, config)})
    write_json(os.path.join(root, "index.json"),
               {"cases": sorted(config_cases()), "saved": json.load(open(os.path.join(models, "index.json")))["models"]})


def make_adapters(out):
    from peft import LoraConfig, get_peft_model
    from peft.tuners.lora import LoraLayer
    from peft.tuners.tuners_utils import check_target_module_exists

    root = os.path.join(out, "adapters")
    os.makedirs(root, exist_ok=True)
    t5, _, bart, bloom = tiny_configs()
    cases = {
        "t5_patterns": (T5ForConditionalGeneration, t5, dict(
            r=4, lora_alpha=8, target_modules=["q", "v", "o", "wi"], task_type="SEQ_2_SEQ_LM",
            rank_pattern={"v": 2, "decoder.block.1.layer.1.EncDecAttention.q": 6},
            alpha_pattern={"layer.1.EncDecAttention.q": 12, "wi": 3})),
        "bart_regex_rslora": (BartForConditionalGeneration, bart, dict(
            r=6, lora_alpha=10, use_rslora=True, target_modules=r".*decoder.*(q_proj|v_proj|fc1)",
            task_type="SEQ_2_SEQ_LM")),
        "bloom_layers": (BloomForCausalLM, bloom, dict(
            r=3, lora_alpha=5, target_modules=["query_key_value", "dense", "dense_h_to_4h", "dense_4h_to_h"],
            layers_to_transform=[1], layers_pattern="h", task_type="CAUSAL_LM")),
        "bloom_lm_head": (BloomForCausalLM, bloom, dict(
            r=2, lora_alpha=4, target_modules=["query_key_value", "lm_head"], task_type="CAUSAL_LM")),
        # Refused by Lorascope (unsupported features), written by PEFT itself.
        "bloom_dora": (BloomForCausalLM, bloom, dict(r=2, target_modules=["dense"], use_dora=True)),
        "bloom_modules_to_save": (BloomForCausalLM, bloom, dict(r=2, target_modules=["dense"],
                                                                 modules_to_save=["lm_head"])),
        "bloom_lora_bias": (BloomForCausalLM, bloom, dict(r=2, target_modules=["dense"], bias="lora_only")),
    }
    index = {}
    for name, (cls, cfg, kwargs) in cases.items():
        torch.manual_seed(99)
        base = cls(cfg)
        module_names = [k for k, _ in base.named_modules() if k]
        lora = LoraConfig(init_lora_weights=False, **kwargs)
        model = get_peft_model(base, lora)
        # init_lora_weights=False leaves lora_B random: the adapters change the outputs.
        directory = os.path.join(root, name)
        model.save_pretrained(directory, safe_serialization=True)
        saved_config = model.peft_config["default"]
        targets = {k: bool(check_target_module_exists(saved_config, k)) for k in module_names}
        modules = {}
        for key, module in model.base_model.model.named_modules():
            if isinstance(module, LoraLayer) and "default" in module.lora_A:
                modules[key] = {"r": module.r["default"], "alpha": module.lora_alpha["default"],
                                "scaling": module.scaling["default"],
                                "lora_A": tensor_record(module.lora_A["default"].weight),
                                "lora_B": tensor_record(module.lora_B["default"].weight)}
        count = sum(m["lora_A"]["shape"][0] * m["lora_A"]["shape"][1] + m["lora_B"]["shape"][0] * m["lora_B"]["shape"][1]
                    for m in modules.values())
        write_json(directory + ".json", {"versions": hf_compat.versions(), "modules": modules,
                                         "targets": targets, "parameter_count": count,
                                         "base_model_type": cfg.model_type})
        index[name] = sorted(modules)
    write_json(os.path.join(root, "index.json"), {"adapters": sorted(index)})


def make_tokenizer_records(out):
    """HF's view of the shared real tokenizers (when present), for `lorascope-cli info`."""
    from transformers import AutoTokenizer
    shared = os.environ.get("LORASCOPE_SHARED_TOKENIZERS", "")
    records = {}
    for name in ("t5", "bart"):
        directory = os.path.join(shared, name)
        if not shared or not os.path.isdir(directory):
            continue
        tok = AutoTokenizer.from_pretrained(directory)
        records[name] = {"directory": directory, "vocab_size": len(tok), "bos": tok.bos_token_id,
                         "eos": tok.eos_token_id, "pad": tok.pad_token_id, "unk": tok.unk_token_id}
    write_json(os.path.join(out, "tokenizers.json"), {"versions": hf_compat.versions(), "tokenizers": records})


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    out = os.path.join(args.out, "io")
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    make_models(out)
    make_mixed(out)
    make_configs(out)
    make_adapters(out)
    make_tokenizer_records(out)
    write_json(os.path.join(out, "versions.json"), hf_compat.versions())


if __name__ == "__main__":
    main()
