"""Oracle step `oracle_models`: tiny random T5, BART, BLOOM and Llama-family (llama_variants.py)
checkpoints, and those of mT5, Marian, mBART, Pegasus and M2M100 (seq2seq_variants.py), built with
Hugging Face's own classes, and HF's outputs on them (raw logits along the greedy path, greedy
generate single and batched, labelled losses) for the C++ model tests.

--device cuda[:N] records HF's outputs computed on that device (scripts/gpu-check); the checkpoints
themselves are always built and tuned on the CPU, so they are the same files whatever the device.

Layout under --out:
  models/<variant>/model/        save_pretrained directory (safetensors, config, generation config)
  models/<variant>/records.json  what HF computed on that directory, reloaded with from_pretrained
  models/t5_tok/...              a tiny T5 whose tokenizer files are symlinks to the real T5 tokenizer
"""
import argparse
import json
import math
import os
import shutil
import sys

import hf_compat  # noqa: F401  (must come before generate() is used)
import llama_variants
import seq2seq_variants
import torch
from safetensors.torch import load_file, save_file
from transformers import (AutoTokenizer, BartConfig, BartForConditionalGeneration, BloomConfig,
                          BloomForCausalLM, T5Config, T5ForConditionalGeneration)

from llama_variants import CAUSAL_FAMILIES, LLAMA_FAMILIES, reset_rotary

MAX_NEW_TOKENS = 32
LOGIT_STEPS = 8
PROMPT_LENGTHS = [1, 7, 23, 60, 3]


def variants():
    common_t5 = dict(vocab_size=320, d_model=32, dropout_rate=0.0, pad_token_id=0, eos_token_id=1,
                     decoder_start_token_id=0)
    common_bart = dict(vocab_size=300, d_model=32, encoder_layers=2, decoder_layers=2,
                       encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                       decoder_ffn_dim=48, max_position_embeddings=128, dropout=0.0,
                       attention_dropout=0.0, activation_dropout=0.0, activation_function="gelu")
    common_bloom = dict(vocab_size=300, hidden_dropout=0.0, attention_dropout=0.0, pad_token_id=3,
                        bos_token_id=1, eos_token_id=2)
    return [
        ("t5_v1_0", "t5", T5ForConditionalGeneration,
         T5Config(d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4,
                  relative_attention_num_buckets=32, relative_attention_max_distance=20,
                  feed_forward_proj="relu", tie_word_embeddings=True, **common_t5), {}),
        ("t5_v1_1", "t5", T5ForConditionalGeneration,
         T5Config(d_kv=12, d_ff=56, num_layers=2, num_decoder_layers=3, num_heads=4,
                  relative_attention_num_buckets=16, relative_attention_max_distance=24,
                  feed_forward_proj="gated-gelu", tie_word_embeddings=False, **common_t5), {}),
        ("bart_plain", "bart", BartForConditionalGeneration,
         BartConfig(scale_embedding=False, forced_bos_token_id=0, **common_bart),
         {"final_logits_bias": True}),
        ("bart_scaled_bare", "bart", BartForConditionalGeneration,
         BartConfig(scale_embedding=True, **common_bart), {"bare": True}),
        # HF allows the stacks different head counts (the decoder's cross-attention uses the decoder's).
        ("bart_heads_differ", "bart", BartForConditionalGeneration,
         BartConfig(scale_embedding=False, **dict(common_bart, encoder_attention_heads=4, decoder_attention_heads=2)),
         {}),
        ("bloom_4h", "bloom", BloomForCausalLM,
         BloomConfig(hidden_size=32, n_layer=2, n_head=4,
                     apply_residual_connection_post_layernorm=False, **common_bloom), {}),
        ("bloom_6h_postln", "bloom", BloomForCausalLM,
         BloomConfig(hidden_size=36, n_layer=3, n_head=6,
                     apply_residual_connection_post_layernorm=True, **common_bloom), {}),
    ] + llama_variants.variants() + seq2seq_variants.variants()


def randomize(model, seed):
    """Spread weights well beyond HF's tiny init so that greedy choices are far from ties."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if not p.requires_grad:          # Marian's and Pegasus's sinusoidal tables stay HF's
                continue
            if p.dim() >= 2:
                fan_in = p.shape[1]
                std = 1.0 if ("embed" in name or "shared" in name or "relative_attention_bias" in name
                              or "word_embeddings" in name) else 1.0 / math.sqrt(fan_in)
                p.copy_(torch.randn(p.shape, generator=g) * std)
            elif name.endswith("weight"):   # norms
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            else:                            # biases
                p.copy_(0.1 * torch.randn(p.shape, generator=g))


def make_prompts(family, vocab, eos, seed, bos=0):
    """Random ids of PROMPT_LENGTHS; seq2seq prompts end with eos, BART-shaped ones start with `bos`
    (None for the types without one: Marian, Pegasus)."""
    g = torch.Generator().manual_seed(seed)
    prompts = []
    for n in PROMPT_LENGTHS:
        if family in CAUSAL_FAMILIES:
            ids = torch.randint(4, vocab, (n,), generator=g).tolist()
        elif family == "bart" and bos is None:
            ids = torch.randint(4, vocab, (n - 1,), generator=g).tolist() + [eos]
        elif family == "bart":
            ids = [eos] if n == 1 else [bos] + torch.randint(4, vocab, (n - 2,), generator=g).tolist() + [eos]
        else:
            ids = torch.randint(2, vocab, (n - 1,), generator=g).tolist() + [eos]
        prompts.append(ids)
    return prompts


def trim(tokens, eos):
    out = []
    for t in tokens:
        out.append(int(t))
        if int(t) == eos:
            break
    return out


def hf_greedy(model, family, prompt, eos):
    reset_rotary(model)
    ids = torch.tensor([prompt], device=model.device)
    out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=MAX_NEW_TOKENS,
                         do_sample=False, num_beams=1)[0].tolist()
    gen = out[1:] if family not in CAUSAL_FAMILIES else out[len(prompt):]
    return trim(gen, eos)


def hf_batched(model, family, prompts, eos, pad):
    reset_rotary(model)
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, p in enumerate(prompts):
        if family in CAUSAL_FAMILIES:   # HF decoder-only batching: left padding
            ids[i, width - len(p):] = torch.tensor(p)
            mask[i, width - len(p):] = 1
        else:
            ids[i, :len(p)] = torch.tensor(p)
            mask[i, :len(p)] = 1
    out = model.generate(ids.to(model.device), attention_mask=mask.to(model.device),
                         max_new_tokens=MAX_NEW_TOKENS, do_sample=False, num_beams=1)
    rows = []
    for i in range(len(prompts)):
        gen = out[i, 1:] if family not in CAUSAL_FAMILIES else out[i, width:]
        rows.append(trim(gen.tolist(), eos))
    return rows


def step_logits(model, family, prompt, greedy, start):
    """Raw (unprocessed) logits of the first decoding steps along HF's greedy path."""
    steps = min(LOGIT_STEPS, len(greedy))
    if family in LLAMA_FAMILIES:
        return llama_variants.incremental_logits(model, prompt, greedy, steps)
    with torch.no_grad():
        if family == "bloom":
            seq = torch.tensor([prompt + greedy[:steps - 1]], device=model.device)
            logits = model(seq).logits[0, len(prompt) - 1:len(prompt) - 1 + steps]
        else:
            dec = torch.tensor([[start] + greedy[:steps - 1]], device=model.device)
            logits = model(input_ids=torch.tensor([prompt], device=model.device), decoder_input_ids=dec).logits[0]
    return logits.tolist()


def score_cases(model, family, prompts, eos, seed):
    vocab = model.get_output_embeddings().weight.shape[0]   # labels are the head's ids (Marian's decoder vocabulary)
    g = torch.Generator().manual_seed(seed)
    cases = []
    for k, prompt in enumerate(prompts[:4]):
        n = [5, 1, 12, 9][k]
        target = torch.randint(4, vocab, (n,), generator=g).tolist()
        if family not in CAUSAL_FAMILIES:
            target = target + [eos]
        labels = list(target)
        if k == 2:
            labels[3] = -100
        reset_rotary(model)
        with torch.no_grad():
            if family in CAUSAL_FAMILIES:
                # A -100 label hides its token from the loss; the input reads pad there, as the
                # seq2seq decoder input does after HF's shift_tokens_right (no pad: eos, as generate pads).
                pad = model.config.pad_token_id if model.config.pad_token_id is not None else eos
                seq = torch.tensor([prompt + [pad if t == -100 else t for t in labels]], device=model.device)
                lab = torch.tensor([[-100] * len(prompt) + labels], device=model.device)
                out = model(seq, labels=lab)
                logp = torch.log_softmax(out.logits[0].float(), -1)
                token_logprobs = []
                for j, t in enumerate(labels):
                    pos = len(prompt) + j - 1
                    token_logprobs.append(None if t == -100 or pos < 0 else float(logp[pos, t]))
            else:
                out = model(input_ids=torch.tensor([prompt], device=model.device),
                            labels=torch.tensor([labels], device=model.device))
                logp = torch.log_softmax(out.logits[0].float(), -1)
                token_logprobs = [None if t == -100 else float(logp[j, t]) for j, t in enumerate(labels)]
        cases.append({"source_ids": prompt, "labels": labels, "loss": float(out.loss),
                      "token_logprobs": token_logprobs})
    return cases


def tune_eos(model, family, prompts, eos):
    """Scale the eos row of the output embedding until some prompts stop at eos and others run to
    the length limit (or, under a forced eos, stop early), so that both finish paths are exercised."""
    head = model.get_output_embeddings().weight
    original = head[eos].detach().clone()
    chosen = None
    longest = (0, 1.0)   # (tokens generated, factor): the fallback keeps the longest paths
    # Up first; down when eos already wins everywhere (a tied, scaled embedding can make it).
    for factor in [1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 8.0, 0.7, 0.6, 0.5]:
        with torch.no_grad():
            head[eos] = original * factor
        outs = [hf_greedy(model, family, p, eos) for p in prompts]
        stopped = [len(o) < MAX_NEW_TOKENS and o[-1] == eos for o in outs]
        if any(stopped) and not all(stopped):
            chosen = factor
            break
        longest = max(longest, (sum(len(o) for o in outs), factor), key=lambda t: t[0])
    if chosen is None:
        chosen = longest[1]
        with torch.no_grad():
            head[eos] = original * chosen
        print(f"  note: no eos scaling gave a mix of eos/length finishes; eos row x{chosen}", file=sys.stderr)
    return chosen


def build_variant(out_root, name, family, cls, config, extra, seed, device="cpu"):
    vdir = os.path.join(out_root, "models", name)
    mdir = os.path.join(vdir, "model")
    if os.path.isdir(vdir):
        shutil.rmtree(vdir)
    os.makedirs(mdir)
    torch.manual_seed(seed)
    model = cls(config).eval()
    randomize(model, seed)
    if "embedding_scale" in extra:
        with torch.no_grad():
            model.get_input_embeddings().weight.mul_(extra["embedding_scale"])
    if extra.get("final_logits_bias"):
        g = torch.Generator().manual_seed(seed + 1)
        model.final_logits_bias.copy_(0.5 * torch.randn(model.final_logits_bias.shape, generator=g))
    if "boost_logit" in extra:   # a token the raw argmax would often pick unless banned (Marian's pad)
        token, amount = extra["boost_logit"]
        model.final_logits_bias[0, token] += amount
    if extra.get("perturb_positions"):   # a stored table that differs from the one HF would compute
        g = torch.Generator().manual_seed(seed + 4)
        for stack in (model.model.encoder, model.model.decoder):
            table = stack.embed_positions.weight
            table.data.add_(0.3 * torch.randn(table.shape, generator=g))
    for key, value in extra.get("generation", {}).items():
        setattr(model.generation_config, key, value)
    eos = config.eos_token_id
    prompts = make_prompts(family, config.vocab_size, eos, seed + 2, bos=extra.get("bos", 0))
    prompts = seq2seq_variants.shape_prompts(prompts, config, extra)
    factor = tune_eos(model, family, prompts, eos)
    model.save_pretrained(mdir, safe_serialization=True)
    drop_tensors(mdir, extra.get("drop_tensors", []))
    if extra.get("bare"):
        # The checkpoint of a bare BartModel: no "model." prefix, no lm_head, no final_logits_bias.
        path = os.path.join(mdir, "model.safetensors")
        state = load_file(path)
        bare = {k[len("model."):]: v.contiguous() for k, v in state.items() if k.startswith("model.")}
        save_file(bare, path, metadata={"format": "pt"})
    model = cls.from_pretrained(mdir, torch_dtype=torch.float32).eval().to(device)

    pad = config.pad_token_id if config.pad_token_id is not None else eos   # generate() pads with eos then
    start = getattr(model.generation_config, "decoder_start_token_id", None)
    if start is None and family not in CAUSAL_FAMILIES:   # generate() starts from bos then (mBART)
        start = model.generation_config.bos_token_id
    greedy = [hf_greedy(model, family, p, eos) for p in prompts]
    batched = hf_batched(model, family, prompts, eos, pad)
    if batched != greedy:
        print(f"  note: HF's own batched greedy differs from single for {name}", file=sys.stderr)
    records = {
        "versions": hf_compat.versions(),
        "device": str(model.device),
        "variant": name,
        "family": family,
        "model_type": config.model_type,
        "forced_bos_token_id": model.generation_config.forced_bos_token_id,
        "forced_eos_token_id": model.generation_config.forced_eos_token_id,
        "model_dir": "model",
        "max_new_tokens": MAX_NEW_TOKENS,
        "eos_token_id": eos,
        "pad_token_id": pad,
        "decoder_start_token_id": start,
        "eos_row_scale": factor,
        "prompts": prompts,
        "greedy": greedy,
        "finish_reason": ["eos" if g and g[-1] == eos else "length" for g in greedy],
        "batched_greedy": batched,
        "step_logits": [step_logits(model, family, p, g, start) for p, g in zip(prompts, greedy)],
        "score": score_cases(model, family, prompts, eos, seed + 3),
    }
    if family in LLAMA_FAMILIES:
        records["rope"] = llama_variants.rope_record(model)
    with open(os.path.join(vdir, "records.json"), "w") as f:
        json.dump(records, f)
    reasons = records["finish_reason"]
    print(f"  {name}: lengths {[len(g) for g in greedy]} finishes {reasons}")


def drop_tensors(mdir, names):
    """A checkpoint without some tensors HF can rebuild (Pegasus's sinusoidal tables, as Marian's
    files leave them out)."""
    if not names:
        return
    path = os.path.join(mdir, "model.safetensors")
    state = load_file(path)
    save_file({k: v.contiguous() for k, v in state.items() if k not in names}, path, metadata={"format": "pt"})


def build_t5_with_real_tokenizer(out_root, tok_dir, device="cpu"):
    vdir = os.path.join(out_root, "models", "t5_tok")
    if os.path.isdir(vdir):
        shutil.rmtree(vdir)
    if not os.path.isfile(os.path.join(tok_dir, "spiece.model")):
        print(f"  t5_tok skipped: no real T5 tokenizer in {tok_dir}")
        return
    mdir = os.path.join(vdir, "model")
    os.makedirs(mdir)
    config = T5Config(vocab_size=32128, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
                      feed_forward_proj="relu", tie_word_embeddings=True, dropout_rate=0.0,
                      decoder_start_token_id=0)
    torch.manual_seed(1234)
    model = T5ForConditionalGeneration(config).eval()
    randomize(model, 1234)
    model.save_pretrained(mdir, safe_serialization=True)
    # Read in place: the tokenizer files are links, never copies.
    for f in ["spiece.model", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"]:
        if os.path.exists(os.path.join(tok_dir, f)):
            os.symlink(os.path.abspath(os.path.join(tok_dir, f)), os.path.join(mdir, f))
    model = T5ForConditionalGeneration.from_pretrained(mdir, torch_dtype=torch.float32).eval().to(device)
    tok = AutoTokenizer.from_pretrained(mdir)
    prompts = ["translate English to German: The house is wonderful.", "Hello",
               "summarize: studies have shown that owning a dog is good for you, and walks help too.",
               "question: what is the capital of France? context: Paris is the capital."]
    requests = []
    for i, text in enumerate(prompts):
        ids = tok(text).input_ids
        out = model.generate(torch.tensor([ids], device=model.device), max_new_tokens=20, do_sample=False)[0].tolist()
        gen = trim(out[1:], config.eos_token_id)
        requests.append({"id": f"r{i}", "prompt": text, "prompt_ids": ids, "max_new_tokens": 20,
                         "token_ids": gen, "text": tok.decode(gen, skip_special_tokens=True)})
    with open(os.path.join(vdir, "records.json"), "w") as f:
        json.dump({"versions": hf_compat.versions(), "device": str(model.device), "variant": "t5_tok", "model_dir": "model",
                   "requests": requests}, f)
    print(f"  t5_tok: {len(requests)} text prompts")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--only", default="")
    parser.add_argument("--device", default=os.environ.get("LORASCOPE_TEST_DEVICE", "cpu"),
                        help="where HF computes the records (cpu, cuda, cuda:N); checkpoints are built on the CPU")
    args = parser.parse_args()
    torch.set_num_threads(1)
    tok_dir = os.path.join(os.environ.get("LORASCOPE_SHARED_TOKENIZERS", "/work/shared/tokenizers"), "t5")
    for seed, (name, family, cls, config, extra) in enumerate(variants(), start=100):
        if args.only and name not in args.only.split(","):
            continue
        build_variant(args.out, name, family, cls, config, extra, seed * 7, args.device)
    if not args.only or "t5_tok" in args.only:
        build_t5_with_real_tokenizer(args.out, tok_dir, args.device)
    if not args.only or "llama_tok" in args.only:
        demo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "resources", "demo", "bloom")
        llama_variants.build_text_variant(args.out, demo, args.device)


if __name__ == "__main__":
    main()
