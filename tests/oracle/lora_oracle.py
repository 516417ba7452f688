"""Oracle step `oracle_lora`: tiny random T5 (plain and gated), BART, BLOOM, Llama, Mistral (with a
sliding window) and Qwen2 (multi-query, q/k/v biases, tied head) checkpoints, and mT5, Marian, mBART,
Pegasus and M2M100 ones (seq2seq_variants.py), each with
PEFT LoRA adapters made by PEFT itself (get_peft_model + save_pretrained) with randomised, non-zero
lora_A/lora_B, and what HF + PEFT compute with each adapter and with the bare base model.

Layout under --out:
  lora/<base>/model/                 the base checkpoint (save_pretrained, safetensors)
  lora/<base>/adapters/<name>/       PEFT adapter directories
  lora/<base>/records.json           prompts, and per run (base = "", then each adapter) HF's greedy
                                     tokens and the raw logits of the first steps along that path
  lora/broken/<name>/                adapters that must be refused: DoRA, shapes from another model size
"""
import argparse
import json
import os
import shutil
import warnings

import hf_compat  # noqa: F401  (must come before generate() is used)
import torch
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import (BartConfig, BartForConditionalGeneration, BloomConfig, BloomForCausalLM, LlamaConfig,
                          LlamaForCausalLM, MistralConfig, MistralForCausalLM, Qwen2Config, Qwen2ForCausalLM,
                          T5Config, T5ForConditionalGeneration)

from llama_variants import CAUSAL_FAMILIES, LLAMA_FAMILIES, TIED
from lora_init import randomize_lora
from models_oracle import make_prompts, randomize, trim
from seq2seq_variants import lora_bases as seq2seq_bases

MAX_NEW_TOKENS = 12
LOGIT_STEPS = 4
PROMPT_LENGTHS = [5, 11, 2]

T5_COMMON = dict(vocab_size=160, d_model=32, dropout_rate=0.0, pad_token_id=0, eos_token_id=1,
                 decoder_start_token_id=0, num_heads=4, d_kv=8)


def bases():
    return [
        ("t5", "t5", T5ForConditionalGeneration,
         T5Config(d_ff=64, num_layers=2, num_decoder_layers=2, feed_forward_proj="relu",
                  tie_word_embeddings=True, **T5_COMMON),
         ["q", "k", "v", "o", "wi", "wo", "lm_head"], ["q", "v"], ["q", "k", "v", "o"],
         {"rank_pattern": {"wi": 3, "decoder.block.1.layer.1.EncDecAttention.q": 2},
          "alpha_pattern": {"o": 20.0}, "targets": ["q", "o", "wi", "wo"]}),
        ("t5_gated", "t5", T5ForConditionalGeneration,
         T5Config(d_ff=48, num_layers=2, num_decoder_layers=2, feed_forward_proj="gated-gelu",
                  tie_word_embeddings=False, **T5_COMMON),
         ["q", "k", "v", "o", "wi_0", "wi_1", "wo", "lm_head"], ["q", "v"], ["wi_0", "wi_1", "wo", "k"],
         {"rank_pattern": {"wi_1": 5}, "alpha_pattern": {"encoder.block.0.layer.0.SelfAttention.v": 3.0},
          "targets": ["v", "wi_0", "wi_1"]}),
        ("bart", "bart", BartForConditionalGeneration,
         BartConfig(vocab_size=150, d_model=32, encoder_layers=2, decoder_layers=2,
                    encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                    decoder_ffn_dim=48, max_position_embeddings=64, dropout=0.0, attention_dropout=0.0,
                    activation_dropout=0.0, activation_function="gelu", scale_embedding=False,
                    # raw argmax is compared step by step; no end-of-length forcing
                    forced_eos_token_id=None),
         ["q_proj", "k_proj", "v_proj", "out_proj", "fc1", "fc2", "lm_head"], ["q_proj", "v_proj"],
         ["k_proj", "out_proj", "fc1"],
         {"rank_pattern": {"fc2": 2, "decoder.layers.0.encoder_attn.v_proj": 9},
          "alpha_pattern": {"fc2": 5.0}, "targets": ["v_proj", "fc2"]}),
        ("bloom", "bloom", BloomForCausalLM,
         BloomConfig(vocab_size=150, hidden_size=32, n_layer=2, n_head=4, hidden_dropout=0.0,
                     attention_dropout=0.0, pad_token_id=3, bos_token_id=1, eos_token_id=2),
         ["query_key_value", "dense", "dense_h_to_4h", "dense_4h_to_h", "lm_head"], ["query_key_value"],
         ["dense_h_to_4h", "dense_4h_to_h"],
         {"rank_pattern": {"dense_h_to_4h": 3, "h.1.self_attention.query_key_value": 7},
          "alpha_pattern": {"h.0.self_attention.query_key_value": 30.0},
          "targets": ["query_key_value", "dense_h_to_4h", "dense"]}),
    ] + llama_bases() + seq2seq_bases()


LLAMA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head"]
LLAMA_COMMON = dict(vocab_size=150, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
                    bos_token_id=1, eos_token_id=2, pad_token_id=0)


def llama_bases():
    return [
        ("llama", "llama", LlamaForCausalLM, LlamaConfig(num_key_value_heads=2, **LLAMA_COMMON),
         LLAMA_TARGETS, ["q_proj", "v_proj"], ["k_proj", "o_proj", "up_proj"],
         {"rank_pattern": {"gate_proj": 3, "model.layers.1.self_attn.k_proj": 2},
          "alpha_pattern": {"down_proj": 5.0}, "targets": ["k_proj", "gate_proj", "down_proj", "o_proj"]}),
        # Prompt plus generation run past the window.
        ("mistral", "mistral", MistralForCausalLM, MistralConfig(num_key_value_heads=2, sliding_window=6, **LLAMA_COMMON),
         LLAMA_TARGETS, ["q_proj", "v_proj"], ["gate_proj", "up_proj", "down_proj", "v_proj"],
         {"rank_pattern": {"up_proj": 5}, "alpha_pattern": {"model.layers.0.self_attn.q_proj": 3.0},
          "targets": ["q_proj", "up_proj", "down_proj"]}),
        ("qwen2", "qwen2", Qwen2ForCausalLM, Qwen2Config(num_key_value_heads=1, tie_word_embeddings=True, **LLAMA_COMMON),
         LLAMA_TARGETS, ["q_proj", "v_proj"], ["q_proj", "k_proj", "v_proj", "o_proj"],
         {"rank_pattern": {"v_proj": 7, "model.layers.0.mlp.gate_proj": 2}, "alpha_pattern": {"k_proj": 30.0},
          "targets": ["v_proj", "k_proj", "gate_proj", "lm_head"]}),
    ]


def adapter_specs(all_targets, small_targets, rs_targets, pattern):
    """(name, LoraConfig kwargs, extra) for the adapters every base gets."""
    return [
        ("small", dict(r=4, lora_alpha=8, target_modules=small_targets),
         {"base_name": "other-org/some-other-model"}),
        ("rslora", dict(r=16, lora_alpha=24, use_rslora=True, target_modules=rs_targets), {}),
        ("all", dict(r=8, lora_alpha=16, target_modules=all_targets), {}),
        ("patterns", dict(r=6, lora_alpha=12, target_modules=pattern["targets"],
                          rank_pattern=pattern["rank_pattern"], alpha_pattern=pattern["alpha_pattern"]), {}),
    ]


def make_adapter(cls, mdir, adir, task_type, kwargs, extra, seed):
    base = cls.from_pretrained(mdir, torch_dtype=torch.float32).eval()
    config = LoraConfig(task_type=task_type, lora_dropout=0.0, init_lora_weights=False, **kwargs)
    peft_model = get_peft_model(base, config)
    randomize_lora(peft_model, seed, b_scale=0.4)
    if "base_name" in extra:
        peft_model.peft_config["default"].base_model_name_or_path = extra["base_name"]
    peft_model.save_pretrained(adir, safe_serialization=True)


def greedy(model, family, prompt, eos):
    ids = torch.tensor([prompt])
    out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=MAX_NEW_TOKENS,
                         do_sample=False, num_beams=1)[0].tolist()
    return trim(out[1:] if family not in CAUSAL_FAMILIES else out[len(prompt):], eos)


def step_logits(model, family, prompt, path, start):
    steps = min(LOGIT_STEPS, len(path))
    with torch.no_grad():
        if family in CAUSAL_FAMILIES:   # no dynamic rope here: one pass equals incremental decoding
            seq = torch.tensor([prompt + path[:steps - 1]])
            logits = model(input_ids=seq).logits[0, len(prompt) - 1:len(prompt) - 1 + steps]
        else:
            dec = torch.tensor([[start] + path[:steps - 1]])
            logits = model(input_ids=torch.tensor([prompt]), decoder_input_ids=dec).logits[0]
    return logits.tolist()


def build_base(out_root, name, family, cls, config, targets, seed):
    bdir = os.path.join(out_root, "lora", name)
    if os.path.isdir(bdir):
        shutil.rmtree(bdir)
    mdir = os.path.abspath(os.path.join(bdir, "model"))
    os.makedirs(mdir)
    torch.manual_seed(seed)
    model = cls(config).eval()
    randomize(model, seed)
    if family in LLAMA_FAMILIES and config.tie_word_embeddings:   # see llama_variants.TIED
        with torch.no_grad():
            model.get_input_embeddings().weight.mul_(TIED["embedding_scale"])
    model.save_pretrained(mdir, safe_serialization=True)
    task_type = "CAUSAL_LM" if family in CAUSAL_FAMILIES else "SEQ_2_SEQ_LM"

    all_targets, small_targets, rs_targets, pattern = targets
    runs = [("", None)]
    for k, (aname, kwargs, extra) in enumerate(adapter_specs(all_targets, small_targets, rs_targets, pattern)):
        adir = os.path.join(bdir, "adapters", aname)
        make_adapter(cls, mdir, adir, task_type, kwargs, extra, seed + 10 + k)
        runs.append((aname, adir))

    eos = config.eos_token_id
    prompts = make_prompts(family, config.vocab_size, eos, seed + 2, bos=getattr(config, "bos_token_id", 0))
    prompts = [p for p in prompts][:len(PROMPT_LENGTHS)]
    records = {"versions": hf_compat.versions(), "base": name, "family": family, "model_dir": "model",
               "max_new_tokens": MAX_NEW_TOKENS, "eos_token_id": eos, "pad_token_id": config.pad_token_id,
               "prompts": prompts, "runs": []}
    for aname, adir in runs:
        model = cls.from_pretrained(mdir, torch_dtype=torch.float32).eval()
        if adir:
            model = PeftModel.from_pretrained(model, adir).eval()
        start = getattr(model.generation_config, "decoder_start_token_id", None) if family not in CAUSAL_FAMILIES else None
        paths = [greedy(model, family, p, eos) for p in prompts]
        cfg = json.load(open(os.path.join(adir, "adapter_config.json"))) if adir else None
        records["runs"].append({
            "adapter": aname,
            "adapter_dir": os.path.relpath(adir, bdir) if adir else None,
            "r": cfg["r"] if cfg else None,
            "use_rslora": cfg["use_rslora"] if cfg else None,
            "greedy": paths,
            "step_logits": [step_logits(model, family, p, g, start) for p, g in zip(prompts, paths)],
        })
    distinct = len({json.dumps(r["greedy"]) for r in records["runs"]})
    with open(os.path.join(bdir, "records.json"), "w") as f:
        json.dump(records, f)
    print(f"  {name}: {len(runs)} runs, {distinct} distinct greedy outputs, "
          f"lengths {[len(g) for g in records['runs'][0]['greedy']]}")


def build_broken(out_root):
    """Adapters PEFT itself writes that Lorascope must refuse when attached to the `t5` base."""
    root = os.path.join(out_root, "lora", "broken")
    if os.path.isdir(root):
        shutil.rmtree(root)
    os.makedirs(root)
    t5_dir = os.path.join(out_root, "lora", "t5", "model")
    # DoRA on the right base.
    make_adapter(T5ForConditionalGeneration, t5_dir, os.path.join(root, "dora"), "SEQ_2_SEQ_LM",
                 dict(r=4, lora_alpha=8, target_modules=["q", "v"], use_dora=True), {}, 7)
    # Same module names, another model width: every A/B shape is wrong for the `t5` base.
    wide = dict(T5_COMMON, d_model=48)
    other = T5ForConditionalGeneration(T5Config(d_ff=64, num_layers=2, num_decoder_layers=2,
                                                feed_forward_proj="relu", tie_word_embeddings=True, **wide))
    odir = os.path.join(root, "wide_model")
    other.save_pretrained(odir, safe_serialization=True)
    make_adapter(T5ForConditionalGeneration, odir, os.path.join(root, "wrong_shapes"), "SEQ_2_SEQ_LM",
                 dict(r=4, lora_alpha=8, target_modules=["q", "v"]), {}, 8)
    print("  broken: dora, wrong_shapes")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    torch.set_num_threads(1)
    # PEFT's notes on tied lm_head / unknown base names are expected here.
    warnings.filterwarnings("ignore", category=UserWarning)
    for k, (name, family, cls, config, all_t, small_t, rs_t, pattern) in enumerate(bases()):
        if args.only and name not in args.only.split(","):
            continue
        build_base(args.out, name, family, cls, config, (all_t, small_t, rs_t, pattern), 4100 + 37 * k)
    if not args.only or "t5" in args.only.split(","):
        build_broken(args.out)


if __name__ == "__main__":
    main()
