"""The tiny Llama-family checkpoints (model_type llama, mistral, qwen2) of `oracle_models`, and what
the Llama-family records add: HF's rotary frequencies, and raw logits taken from generate() itself.

Between them the variants cover grouped-query and multi-query attention, every rope_scaling type
transformers 4.46 applies to these classes (default, linear, dynamic, yarn, longrope, llama3),
head_dim given apart from hidden_size, Llama's attention and MLP biases, Qwen2's q/k/v biases,
sliding windows far shorter than prompt plus generation (Mistral's, and Qwen2's with
use_sliding_window), tied and untied heads.
"""
import torch
from transformers import (LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM, Qwen2Config,
                          Qwen2ForCausalLM)
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

CAUSAL_FAMILIES = ("bloom", "llama", "mistral", "qwen2")
LLAMA_FAMILIES = ("llama", "mistral", "qwen2")


# randomize() draws embeddings with std 1; as a tied head that gives logits of +-40, where 1e-5 of a
# log-probability is 3 float32 ulps. Real tied checkpoints (Qwen2.5 0.5B) have logits of +-20 or so.
TIED = {"embedding_scale": 0.25}


def variants():
    common = dict(vocab_size=300, bos_token_id=1, eos_token_id=2, attention_dropout=0.0)
    return [
        ("llama_gqa", "llama", LlamaForCausalLM,
         LlamaConfig(hidden_size=48, intermediate_size=80, num_hidden_layers=2, num_attention_heads=6,
                     num_key_value_heads=2, max_position_embeddings=256, pad_token_id=0, **common), {}),
        ("llama_mqa_bias_tied_linear", "llama", LlamaForCausalLM,
         LlamaConfig(hidden_size=32, intermediate_size=56, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=1, head_dim=16, attention_bias=True, mlp_bias=True, tie_word_embeddings=True,
                     rms_norm_eps=1e-5, rope_scaling={"rope_type": "linear", "factor": 2.0}, pad_token_id=0,
                     **common), TIED),
        # max_position_embeddings below the longer prompts, so that the frequencies are recomputed
        # at the prefill and again at every decoding step past it.
        ("llama_dynamic", "llama", LlamaForCausalLM,
         LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=2, max_position_embeddings=32,
                     rope_scaling={"rope_type": "dynamic", "factor": 2.0}, pad_token_id=0, **common), {}),
        ("llama_llama3", "llama", LlamaForCausalLM,
         LlamaConfig(hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=2,
                     num_key_value_heads=1, max_position_embeddings=128, rope_theta=500000.0,
                     rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                   "high_freq_factor": 4.0, "original_max_position_embeddings": 16},
                     pad_token_id=0, **common), {}),
        ("llama_yarn", "llama", LlamaForCausalLM,
         LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                     max_position_embeddings=64, rope_scaling={"rope_type": "yarn", "factor": 4.0, "beta_fast": 16.0},
                     pad_token_id=0, **common), {}),
        ("llama_longrope", "llama", LlamaForCausalLM,
         LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=2, max_position_embeddings=64,
                     rope_scaling={"rope_type": "longrope", "factor": 4.0, "short_factor": [1.0, 1.1, 1.3, 1.6],
                                   "long_factor": [1.0, 1.5, 2.5, 4.0]}, pad_token_id=0, **common), {}),
        ("mistral_window", "mistral", MistralForCausalLM,
         MistralConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                       num_key_value_heads=2, head_dim=12, sliding_window=8, max_position_embeddings=256,
                       pad_token_id=0, **common), {}),
        # No pad token: generate() and our engine pad with eos.
        ("mistral_mqa_tied", "mistral", MistralForCausalLM,
         MistralConfig(hidden_size=32, intermediate_size=48, num_hidden_layers=3, num_attention_heads=4,
                       num_key_value_heads=1, sliding_window=24, tie_word_embeddings=True, **common), TIED),
        ("qwen2_gqa_tied_yarn", "qwen2", Qwen2ForCausalLM,
         Qwen2Config(hidden_size=48, intermediate_size=96, num_hidden_layers=2, num_attention_heads=6,
                     num_key_value_heads=2, rope_theta=1000000.0, tie_word_embeddings=True, max_position_embeddings=64,
                     rope_scaling={"rope_type": "yarn", "factor": 2.0}, pad_token_id=0, **common), TIED),
        # transformers 4.46's eager attention windows every layer whatever max_window_layers says.
        ("qwen2_window_dynamic", "qwen2", Qwen2ForCausalLM,
         Qwen2Config(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=2, use_sliding_window=True, sliding_window=12, max_window_layers=1,
                     max_position_embeddings=48, rope_scaling={"type": "dynamic", "factor": 2.0}, pad_token_id=0,
                     **common), {}),
    ]


def rotary_modules(model):
    return [m for m in model.modules() if hasattr(m, "inv_freq")]


def reset_rotary(model):
    """A freshly loaded model's rotary state. Dynamic NTK keeps the frequencies of the longest
    sequence seen until a pass shorter than max_position_embeddings resets them, so a pass of length
    between the two would reuse an earlier request's frequencies: each request here starts fresh."""
    for m in rotary_modules(model):
        if hasattr(m, "original_inv_freq"):
            m.inv_freq = m.original_inv_freq
            m.max_seq_len_cached = m.original_max_seq_len


def incremental_logits(model, prompt, path, steps):
    """Raw logits of the first `steps` decoding steps along `path`, computed incrementally as
    generate() computes them (prefill, then one token at a time against the cache), which is what
    our decoding does: with dynamic NTK a single forward over prompt + path would rotate the prompt
    with the frequencies of the longer sequence."""
    reset_rotary(model)
    out = []
    with torch.no_grad():
        ids = torch.tensor([prompt], device=model.device)
        result = model(ids, use_cache=True)
        out.append(result.logits[0, -1])
        past = result.past_key_values
        for s in range(1, steps):
            token = torch.tensor([[path[s - 1]]], device=model.device)
            result = model(token, past_key_values=past, use_cache=True,
                           position_ids=torch.tensor([[len(prompt) + s - 1]], device=model.device))
            out.append(result.logits[0, -1])
            past = result.past_key_values
    return torch.stack(out).tolist()


def rope_record(model):
    """HF's inverse frequencies and attention scaling at load; for dynamic NTK also those it
    computes for a few sequence lengths past max_position_embeddings."""
    rotary = rotary_modules(model)[0]
    rec = {"inv_freq": rotary.inv_freq.tolist(), "attention_scaling": float(getattr(rotary, "attention_scaling", 1.0))}
    if getattr(rotary, "rope_type", "default") == "dynamic":
        init = ROPE_INIT_FUNCTIONS["dynamic"]
        lengths = [model.config.max_position_embeddings + k for k in (1, 17, 100)]
        rec["dynamic"] = [{"length": n, "inv_freq": init(model.config, "cpu", seq_len=torch.tensor(n))[0].tolist()}
                          for n in lengths]
    return rec


TEXT_PROMPTS = ["The cat sat on the mat.", "Hello", "a b c d e f g", "Once upon a time, there was a tiny model."]


def build_text_variant(out_root, demo_dir, device="cpu"):
    """models/llama_tok: a tiny Llama whose tokenizer files are links to the demo pack's byte-level
    BPE (a Llama-architecture checkpoint may carry any tokenizer HF can load); HF's text in and text
    out, for the CLI tests (generate with text, tokenize)."""
    import json
    import os
    import shutil

    import hf_compat
    from transformers import AutoTokenizer

    from models_oracle import randomize, trim
    vdir = os.path.join(out_root, "models", "llama_tok")
    if os.path.isdir(vdir):
        shutil.rmtree(vdir)
    mdir = os.path.join(vdir, "model")
    os.makedirs(mdir)
    config = LlamaConfig(vocab_size=360, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, bos_token_id=1, eos_token_id=2, pad_token_id=3)
    torch.manual_seed(4321)
    model = LlamaForCausalLM(config).eval()
    randomize(model, 4321)
    model.save_pretrained(mdir, safe_serialization=True)
    for f in ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"]:
        os.symlink(os.path.abspath(os.path.join(demo_dir, f)), os.path.join(mdir, f))
    model = LlamaForCausalLM.from_pretrained(mdir, torch_dtype=torch.float32).eval().to(device)
    tok = AutoTokenizer.from_pretrained(mdir)
    requests = []
    for i, text in enumerate(TEXT_PROMPTS):
        ids = tok(text).input_ids
        with torch.no_grad():
            out = model.generate(torch.tensor([ids], device=model.device), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                                 max_new_tokens=16, do_sample=False)[0].tolist()
        gen = trim(out[len(ids):], config.eos_token_id)
        requests.append({"id": f"r{i}", "prompt": text, "prompt_ids": ids, "max_new_tokens": 16,
                         "token_ids": gen, "text": tok.decode(gen, skip_special_tokens=True)})
    with open(os.path.join(vdir, "records.json"), "w") as f:
        json.dump({"versions": hf_compat.versions(), "device": str(model.device), "variant": "llama_tok",
                   "model_dir": "model", "requests": requests}, f)
    print(f"  llama_tok: {len(requests)} text prompts")
