"""Accuracy of the reduced-precision CPU paths against Hugging Face float32 (issue 15), on the
models and prompts of scripts/bench-peers W1-W3: lorascope float32 (the control), bfloat16 and
int8, and CTranslate2 int8, each measured the same way.

For every prompt, Hugging Face float32 decodes greedily for exactly N tokens (EOS suppressed); that
continuation G is the reference. Each system then
  - decodes greedily itself (EOS suppressed the same way, min_new_tokens = N): token agreement is the share of the N positions where its token equals
    G's, and "identical" the share of prompts whose whole continuation equals G;
  - scores G teacher-forced (lorascope-cli score; CTranslate2 score_batch): the mean absolute
    difference of the log-probabilities of G's tokens against HF's (the same contexts for every
    system, so a divergence early in a sequence does not inflate it), and the relative change of
    the loss (mean negative log-likelihood of G) per prompt.
The models have random weights: their next-token distributions are flat, so argmax decisions are
fragile and token agreement is a harsh measure; the demo pack's trained models are the gentle one
(tests/demo requires held-out exact match within 0.02 of float32).

usage (through scripts/bench-peers --accuracy): [--workloads W1,W2,W3] [--prompts 64] [--new-tokens 64]
                                                 [--threads 2] [--out FILE]
"""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_peers_models as models  # noqa: E402

WORKLOADS = {"W1": "t5", "W2": "bart", "W3": "bloom"}
# name: (--dtype, --kv-cache-dtype). bfloat16 and int8 store a bfloat16 KV cache by default; the
# float32-cache row shows what that cache costs on its own.
OURS = {"lorascope float32": ("float32", "auto"), "lorascope bfloat16": ("bfloat16", "auto"),
        "lorascope int8": ("int8", "auto"), "lorascope int8, float32 KV cache": ("int8", "float32"),
        "lorascope int4": ("int4", "auto")}


def hf_reference(family, model_dir, rows, n):
    """(continuations G, per-token log-probabilities of G, loss per prompt), HF float32, batch 1."""
    import hf_compat  # noqa: F401  (offline env and the torch.distributed shim generate() needs)
    import torch
    import transformers
    spec = models.FAMILIES[family]
    model = getattr(transformers, spec["cls"]).from_pretrained(model_dir, torch_dtype=torch.float32).eval()
    seq2seq = family != "bloom"
    pad = spec["specials"]["pad"]
    conts, lps, losses = [], [], []
    with torch.inference_mode():
        for r in rows:
            ids = torch.tensor([r])
            out = model.generate(input_ids=ids, max_new_tokens=n, min_new_tokens=n, do_sample=False, num_beams=1,
                                 pad_token_id=pad)
            g = out[0, 1:].tolist() if seq2seq else out[0, len(r):].tolist()
            assert len(g) == n, (len(g), n)
            labels = torch.tensor([g])
            if seq2seq:
                logits = model(input_ids=ids, labels=labels).logits[0]
            else:
                logits = model(input_ids=torch.tensor([r + g])).logits[0, len(r) - 1:-1]
            lp = torch.log_softmax(logits.float(), -1).gather(1, labels[0].unsqueeze(1)).squeeze(1).tolist()
            conts.append(g)
            lps.append(lp)
            losses.append(-sum(lp) / len(lp))
    return conts, lps, losses


def cached_reference(work, family, model_dir, rows, n):
    """hf_reference, kept in the work directory: W3's takes ~30 min on one thread, and it only
    changes with the model files, the prompts, N or transformers."""
    import hashlib
    import transformers
    h = hashlib.sha256(json.dumps([rows, n, transformers.__version__]).encode())
    for name in sorted(os.listdir(model_dir)):
        st = os.stat(os.path.join(model_dir, name))
        h.update(f"{name}:{st.st_size}:{st.st_mtime_ns};".encode())
    path = os.path.join(work, "accuracy-reference", f"{family}-{h.hexdigest()[:16]}.json")
    if os.path.exists(path):
        with open(path) as f:
            print(f"  HF reference from {path}", file=sys.stderr, flush=True)
            return tuple(json.load(f))
    ref = hf_reference(family, model_dir, rows, n)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(ref, f)
    os.replace(path + ".tmp", path)
    return ref


def run_cli(cmd, lines):
    proc = subprocess.run(cmd, input="".join(json.dumps(l) + "\n" for l in lines), capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    out = [json.loads(l) for l in proc.stdout.splitlines() if l.strip()]
    for o in out:
        if "error" in o:
            raise SystemExit(f"{' '.join(cmd)}: {o}")
    return sorted(out, key=lambda o: o["id"])


def ours(cli, model_dir, dtype, kv, rows, conts, n, threads):
    gen = run_cli([cli, "generate", "--model", model_dir, "--dtype", dtype, "--kv-cache-dtype", kv,
                   "--threads", str(threads), "--max-batch-size", "32"],
                  [{"id": i, "input_ids": r, "params": {"max_new_tokens": n, "min_new_tokens": n}}
                   for i, r in enumerate(rows)])
    scored = run_cli([cli, "score", "--model", model_dir, "--dtype", dtype, "--kv-cache-dtype", kv,
                      "--threads", str(threads)],
                     [{"id": i, "input_ids": r, "labels": g} for i, (r, g) in enumerate(zip(rows, conts))])
    return ([o["token_ids"] for o in gen], [o["token_logprobs"] for o in scored], [o["loss"] for o in scored])


def ct2_int8(family, model_dir, ct2_dir, rows, conts, n, threads):
    import ctranslate2
    vocab = models.ct2_vocabulary(ct2_dir)
    index = {t: i for i, t in enumerate(vocab)}
    seq2seq = family != "bloom"
    cls = ctranslate2.Translator if seq2seq else ctranslate2.Generator
    model = cls(ct2_dir, device="cpu", compute_type="int8", intra_threads=threads, inter_threads=1)
    src = [[vocab[i] for i in r] for r in rows]
    tgt = [[vocab[i] for i in g] for g in conts]
    if seq2seq:
        res = model.translate_batch(src, max_batch_size=32, beam_size=1, max_decoding_length=n, min_decoding_length=n)
        gens = [[index[t] for t in x.hypotheses[0]] for x in res]
        # score_batch appends </s> to each target and scores it too: keep G's own positions.
        lps = [x.log_probs[:n] for x in model.score_batch(src, tgt, max_batch_size=32)]
    else:
        res = model.generate_batch(src, max_batch_size=32, beam_size=1, max_length=n, min_length=n,
                                   include_prompt_in_result=False)
        gens = [x.sequences_ids[0] for x in res]
        # A Generator scores every token after the first: G's positions are the last n.
        lps = [x.log_probs[-n:] for x in model.score_batch([s + t for s, t in zip(src, tgt)], max_batch_size=32)]
    return gens, lps, [-sum(lp) / len(lp) for lp in lps]


def compare(ref, got, n):
    conts, ref_lps, ref_losses = ref
    gens, lps, losses = got
    same = sum(a == b for g, c in zip(gens, conts) for a, b in zip(g[:n], c))
    identical = sum(g[:n] == c for g, c in zip(gens, conts))
    diffs = [abs(a - b) for lp, rl in zip(lps, ref_lps) for a, b in zip(lp, rl)]
    rel = [abs(l - rl) / rl for l, rl in zip(losses, ref_losses)]
    return {"token_agreement": same / (n * len(conts)), "identical_sequences": identical / len(conts),
            "mean_abs_logprob_diff": sum(diffs) / len(diffs), "max_abs_logprob_diff": max(diffs),
            "mean_rel_loss_change": sum(rel) / len(rel), "max_rel_loss_change": max(rel)}


def markdown(report):
    lines = ["| Workload | System | token agreement | identical sequences | mean / max abs logprob diff | "
             "mean / max rel. loss change |", "|---|---|---:|---:|---:|---:|"]
    for w in report["workloads"]:
        for name, m in w["systems"].items():
            lines.append(f"| {w['workload']} | {name} | {m['token_agreement']:.3f} | {m['identical_sequences']:.3f} | "
                         f"{m['mean_abs_logprob_diff']:.4f} / {m['max_abs_logprob_diff']:.3f} | "
                         f"{m['mean_rel_loss_change']:.4f} / {m['max_rel_loss_change']:.3f} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", required=True)
    ap.add_argument("--cli", default="")
    ap.add_argument("--workloads", default="W1,W2,W3")
    ap.add_argument("--prompts", type=int, default=64)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work-dir", default="")
    ap.add_argument("--out", default="")
    ap.add_argument("--isa", default="", help="LORASCOPE_CPU_ISA for our runs (avx2, avx2_vnni, scalar): the "
                                                 "accuracy of that instruction set's kernels")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    sys.path.insert(0, os.path.join(root, "tests", "oracle"))
    cli = os.path.abspath(args.cli or os.path.join(root, "build", "release", "bin", "lorascope-cli"))
    work = os.path.abspath(args.work_dir or os.path.join(root, "build", "bench-peers"))
    out_path = args.out or os.path.join(work, "accuracy.json")
    os.environ.update(OMP_NUM_THREADS=str(args.threads), CT2_VERBOSE="-1")
    if args.isa:
        os.environ["LORASCOPE_CPU_ISA"] = args.isa
    import torch
    torch.set_num_threads(args.threads)
    rows = models.prompts(64, 8, 128)[:args.prompts]
    n = args.new_tokens
    report = {"command": " ".join(["scripts/bench-peers --accuracy"] + sys.argv[3:]), "cli": cli,
              "prompts": len(rows), "new_tokens": n, "workloads": []}
    for w in [x.strip().upper() for x in args.workloads.split(",") if x.strip()]:
        family = WORKLOADS[w]
        model_dir = models.build_model(family, os.path.join(work, "models", family))
        ct2_dir = models.build_ct2(family, model_dir, os.path.join(work, "ct2", family))
        t = time.perf_counter()
        print(f"{w}: HF float32 reference ...", file=sys.stderr, flush=True)
        ref = cached_reference(work, family, model_dir, rows, n)
        systems = {}
        for name, (dtype, kv) in OURS.items():
            systems[name] = compare(ref, ours(cli, model_dir, dtype, kv, rows, ref[0], n, args.threads), n)
        systems["CTranslate2 int8"] = compare(ref, ct2_int8(family, model_dir, ct2_dir, rows, ref[0], n, args.threads), n)
        report["workloads"].append({"workload": w, "family": family, "systems": systems,
                                    "elapsed_s": time.perf_counter() - t})
        report["markdown"] = markdown(report)
        with open(out_path, "w") as f:
            json.dump(report, f, indent=2)
    print(report["markdown"])
    print(f"\nJSON: {out_path}")


if __name__ == "__main__":
    main()
