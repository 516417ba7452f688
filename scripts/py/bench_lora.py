"""Multi-LoRA throughput with lorascope-cli bench (see scripts/bench-lora).

A random BLOOM-shaped model and 8 adapters made by PEFT (get_peft_model + save_pretrained, random
non-zero weights) with ranks 8, 16, ..., 64 are built once under --work. Three measurements on the
same 64 prompts, every request generating exactly --new-tokens tokens (ignore_eos):
  mixed       one engine with all 8 adapters, requests round-robin over them, all submitted at once
  base        the same 64 requests without adapters
  sequential  for each adapter, a run holding only its 8 requests; tokens / summed wall time
Model loading is outside every timing (lorascope-cli bench times from the first submit).
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "oracle"))
import hf_compat  # noqa: E402,F401
import torch  # noqa: E402
from peft import LoraConfig, get_peft_model  # noqa: E402
from transformers import BloomConfig, BloomForCausalLM  # noqa: E402

RANKS = [8, 16, 24, 32, 40, 48, 56, 64]
TARGETS = {"attention": ["query_key_value", "dense"],
           "all": ["query_key_value", "dense", "dense_h_to_4h", "dense_4h_to_h"]}


def build(work, hidden, layers, vocab, targets):
    tag = f"bloom_h{hidden}_l{layers}_v{vocab}"
    mdir = os.path.join(work, tag, "model")
    if not os.path.exists(os.path.join(mdir, "config.json")):
        torch.manual_seed(0)
        config = BloomConfig(vocab_size=vocab, hidden_size=hidden, n_layer=layers, n_head=hidden // 64,
                             pad_token_id=3, bos_token_id=1, eos_token_id=2)
        BloomForCausalLM(config).save_pretrained(mdir, safe_serialization=True)
    adapters = []
    for i, r in enumerate(RANKS):
        adir = os.path.join(work, tag, f"adapters_{targets}", f"r{r}")
        if not os.path.exists(os.path.join(adir, "adapter_config.json")):
            base = BloomForCausalLM.from_pretrained(mdir, torch_dtype=torch.float32)
            model = get_peft_model(base, LoraConfig(task_type="CAUSAL_LM", r=r, lora_alpha=2 * r,
                                                    target_modules=TARGETS[targets], init_lora_weights=False))
            g = torch.Generator().manual_seed(100 + i)
            with torch.no_grad():
                for name, p in model.named_parameters():
                    if "lora_" in name:
                        p.copy_(torch.randn(p.shape, generator=g) * 0.02)
            model.save_pretrained(adir, safe_serialization=True)
        adapters.append((f"r{r}", adir))
    return mdir, adapters


def run_bench(cli, model_dir, adapters, requests, threads, new_tokens, work, label):
    workload = {"name": label, "params": {"max_new_tokens": new_tokens, "ignore_eos": True},
                "requests": requests}
    path = os.path.join(work, f"workload_{label}.json")
    with open(path, "w") as f:
        json.dump(workload, f)
    cmd = [cli, "bench", "--model", model_dir, "--workload", path, "--threads", str(threads),
           "--max-batch-size", "64", "--max-batch-tokens", "1000000"]
    for name, adir in adapters:
        cmd += ["--adapter", f"{name}={adir}"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    report = json.loads(out)
    if report["failed_requests"]:
        raise SystemExit(f"{label}: {report['failed_requests']} requests failed: {report.get('first_error')}")
    expected = len(requests) * new_tokens
    if report["generated_tokens"] != expected:
        raise SystemExit(f"{label}: generated {report['generated_tokens']} tokens, expected {expected}")
    return report


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--cli", default="")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work", default="")
    ap.add_argument("--targets", choices=sorted(TARGETS), default="attention")
    ap.add_argument("--requests", type=int, default=64)
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--vocab", type=int, default=8192)
    args = ap.parse_args()
    cli = args.cli or os.path.join(args.root, "build", "release", "bin", "lorascope-cli")
    work = args.work or os.path.join(args.root, "build", "bench-lora")
    os.makedirs(work, exist_ok=True)
    torch.set_num_threads(args.threads)

    model_dir, adapters = build(work, args.hidden, args.layers, args.vocab, args.targets)
    g = torch.Generator().manual_seed(7)
    prompts = [torch.randint(4, args.vocab, (int(n),), generator=g).tolist()
               for n in torch.randint(16, 49, (args.requests,), generator=g)]
    names = [name for name, _ in adapters]
    mixed_requests = [{"input_ids": p, "adapter": names[i % len(names)]} for i, p in enumerate(prompts)]
    base_requests = [{"input_ids": p} for p in prompts]

    runs = {}
    runs["mixed"] = run_bench(cli, model_dir, adapters, mixed_requests, args.threads, args.new_tokens, work, "mixed")
    runs["base"] = run_bench(cli, model_dir, [], base_requests, args.threads, args.new_tokens, work, "base")
    seq_tokens, seq_wall = 0, 0.0
    for k, (name, adir) in enumerate(adapters):
        own = [r for r in mixed_requests if r["adapter"] == name]
        rep = run_bench(cli, model_dir, [(name, adir)], own, args.threads, args.new_tokens, work, f"seq_{name}")
        seq_tokens += rep["generated_tokens"]
        seq_wall += rep["wall_s"]
    seq_tps = seq_tokens / seq_wall

    mixed_tps, base_tps = runs["mixed"]["tokens_per_s"], runs["base"]["tokens_per_s"]
    summary = {
        "model": model_dir, "targets": TARGETS[args.targets], "ranks": RANKS, "threads": args.threads,
        "requests": args.requests, "new_tokens": args.new_tokens,
        "tokens_per_s": {"mixed_8_adapters": round(mixed_tps, 1), "base": round(base_tps, 1),
                         "sequential_per_adapter": round(seq_tps, 1)},
        "wall_s": {"mixed_8_adapters": round(runs["mixed"]["wall_s"], 2), "base": round(runs["base"]["wall_s"], 2),
                   "sequential_per_adapter": round(seq_wall, 2)},
        "ratio_mixed_over_base": round(mixed_tps / base_tps, 3),
        "ratio_sequential_over_base": round(seq_tps / base_tps, 3),
        "speedup_mixed_over_sequential": round(mixed_tps / seq_tps, 3),
        "mean_batch_rows": {"mixed": runs["mixed"]["mean_batch_rows"], "base": runs["base"]["mean_batch_rows"]},
    }
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
