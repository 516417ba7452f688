"""Per-step decode timing, lorascope-cli vs Hugging Face transformers (see scripts/bench-decode).

Both sides are timed the same way: a run that generates 1 token and a run that generates 1 + N
tokens for the same batch; their difference over N is the cost of one decoding step (encoder,
prefill and model loading cancel). The eos row of the output embedding is zeroed so that random
models never stop early; the number of generated tokens is checked.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "oracle"))
import hf_compat  # noqa: E402,F401
import torch  # noqa: E402
from transformers import BloomConfig, BloomForCausalLM, T5Config, T5ForConditionalGeneration  # noqa: E402

PROMPT_TOKENS = 16


def build(kind, path):
    if os.path.exists(os.path.join(path, "config.json")):
        return
    torch.manual_seed(0)
    if kind == "t5":
        config = T5Config(vocab_size=32128, d_model=512, d_kv=64, d_ff=2048, num_layers=6, num_decoder_layers=6,
                          num_heads=8, feed_forward_proj="relu", tie_word_embeddings=True, decoder_start_token_id=0)
        model = T5ForConditionalGeneration(config)
    else:
        config = BloomConfig(vocab_size=250880, hidden_size=1024, n_layer=8, n_head=16, pad_token_id=3)
        model = BloomForCausalLM(config)
    with torch.no_grad():
        model.get_output_embeddings().weight[config.eos_token_id].zero_()
    model.save_pretrained(path, safe_serialization=True)


def prompts(batch, vocab):
    g = torch.Generator().manual_seed(batch)
    return torch.randint(4, vocab, (batch, PROMPT_TOKENS), generator=g).tolist()


def time_hf(model, ids, new_tokens, threads):
    """(wall seconds, CPU seconds of this process) for one generate() call."""
    torch.set_num_threads(threads)
    x = torch.tensor(ids)
    with torch.no_grad():
        start, cpu = time.perf_counter(), time.process_time()
        model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=new_tokens,
                       min_new_tokens=new_tokens, do_sample=False, num_beams=1)
        return time.perf_counter() - start, time.process_time() - cpu


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_ours(cli, model_dir, ids, new_tokens, threads):
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for i, row in enumerate(ids):
            f.write(json.dumps({"id": str(i), "input_ids": row, "params": {"max_new_tokens": new_tokens}}) + "\n")
        path = f.name
    try:
        start, cpu = time.perf_counter(), children_cpu()
        out = subprocess.run([cli, "generate", "--model", model_dir, "--threads", str(threads),
                              "--max-batch-size", str(len(ids)), "--input", path, "--output", "-"],
                             check=True, capture_output=True, text=True).stdout
        elapsed = time.perf_counter() - start, children_cpu() - cpu
    finally:
        os.unlink(path)
    generated = [json.loads(line)["generated_tokens"] for line in out.splitlines() if line.strip()]
    if max(generated) != new_tokens:
        raise SystemExit(f"lorascope-cli generated {max(generated)} tokens, expected {new_tokens}")
    return elapsed


def per_step(fn, steps, repeats, clock):
    pick = 0 if clock == "wall" else 1
    short = min(fn(1)[pick] for _ in range(repeats))
    long = min(fn(1 + steps)[pick] for _ in range(repeats))
    return (long - short) / steps


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--root", required=True)
    p.add_argument("--cli", default="")
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--work", default="")
    p.add_argument("--steps", type=int, default=32)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--only", default="t5,bloom")
    p.add_argument("--batches", default="1,16")
    p.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                   help="cpu: CPU seconds (user+sys, all threads) instead of wall time; steadier on a busy machine")
    args = p.parse_args()
    cli = args.cli or os.path.join(args.root, "build", "release", "bin", "lorascope-cli")
    work = args.work or os.path.join(args.root, "build", "bench-decode")
    os.makedirs(work, exist_ok=True)
    print(f"{args.clock} clock, threads {args.threads}, {args.steps} timed steps, prompts of {PROMPT_TOKENS} tokens, "
          f"versions {hf_compat.versions()}")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'model':8} {'batch':>5} {'HF ms/step':>11} {'ours ms/step':>13} {'HF/ours':>8}")
    for kind in args.only.split(","):
        model_dir = os.path.join(work, kind)
        build(kind, model_dir)
        cls = T5ForConditionalGeneration if kind == "t5" else BloomForCausalLM
        model = cls.from_pretrained(model_dir, torch_dtype=torch.float32).eval()
        vocab = model.config.vocab_size
        for batch in [int(b) for b in args.batches.split(",")]:
            ids = prompts(batch, vocab)
            hf = per_step(lambda n: time_hf(model, ids, n, args.threads), args.steps, args.repeats, args.clock)
            ours = per_step(lambda n: time_ours(cli, model_dir, ids, n, args.threads), args.steps, args.repeats,
                            args.clock)
            print(f"{kind:8} {batch:>5} {hf * 1e3:>11.2f} {ours * 1e3:>13.2f} {hf / ours:>8.2f}", flush=True)
        del model


if __name__ == "__main__":
    main()
