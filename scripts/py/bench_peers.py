"""Peer benchmark: lorascope-cli bench against Hugging Face transformers (+ PEFT) and CTranslate2
on the same random real-shaped models, prompts, lengths and thread count (see scripts/bench-peers
and docs/benchmarks.md). Each system runs each workload in its own process; every system must
generate exactly new_tokens tokens per prompt or the run stops.
"""
import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_peers_models as models  # noqa: E402
import bench_peers_w6 as w6  # noqa: E402

WORKLOADS = {
    # name: (family, prompts, new tokens, adapters, arrival)
    "W1": dict(family="t5", prompts=64, new_tokens=64, what="t5-small shape, 64 prompts of 8-128 tokens"),
    "W2": dict(family="bart", prompts=64, new_tokens=64, what="bart-base shape, the W1 prompts"),
    "W3": dict(family="bloom", prompts=32, new_tokens=64,
               what="BLOOM 8 layers / 1024 wide / 16 heads / vocab 250880, the first 32 W1 prompts"),
    "W4": dict(family="t5", prompts=64, new_tokens=64, adapters=True,
               what="W1 over 8 LoRA adapters (ranks 8-64 on q,k,v,o), round robin"),
    "W5": dict(family="t5", prompts=64, new_tokens=64, poisson=True,
               what="W1 arriving as a Poisson stream; ours continuous vs ours static"),
    "W6": dict(family="t5,bloom", prompts=128, new_tokens=0, policies=True,
               what="W1's model (128 requests, 8-256 new tokens) and W3's BLOOM (64, 8-128), all at once and "
                    "Poisson at 0.9x; ours static vs continuous vs continuous with static's per-token p95 as target, "
                    "both continuous ones again with the queue packed by length"),
    "W7": dict(family="qwen2", prompts=32, new_tokens=128, prompt_range=(16, 512),
               what="Qwen2.5-0.5B shape (24 layers, 896 wide, 14 / 2 KV heads, vocab 151936, tied), "
                    "32 prompts of 16-512 tokens"),
    # The batch-1 row: one request alone, its per-token latency.
    "W7-B1": dict(family="qwen2", prompts=1, new_tokens=256, prompt_range=(128, 128),
                  what="W7's model, one request of 128 prompt tokens, 256 new tokens (per-token latency)"),
}
QUICK = dict(prompts=8, new_tokens=8, batch=4, max_len=32)


def machine_facts(root, threads):
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    versions = {"python": platform.python_version()}
    for name in ("torch", "transformers", "peft", "ctranslate2"):
        # Read from package metadata: importing them would grow this process (see build()).
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    commit = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    flags = []
    try:
        with open("/proc/cpuinfo") as f:
            have = next(line.split(":", 1)[1].split() for line in f if line.startswith("flags"))
        flags = [x for x in ("avx2", "fma", "f16c", "avx_vnni", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
                             "avx512_bf16", "amx_int8", "amx_bf16") if x in have]
    except (OSError, StopIteration):
        pass
    return {"cpu": cpu, "cpu_flags": flags, "cores": os.cpu_count(), "threads": threads, "versions": versions,
            "commit": commit + ("-dirty" if dirty else ""), "load_average_start": os.getloadavg(),
            "date_utc": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC")}


def build(ctx, what, *args):
    """Runs a bench_peers_models builder in a child process and returns its result.

    The harness itself stays small: a child's ru_maxrss starts from its parent's peak (the kernel
    keeps it across fork and execve), so a harness that had loaded BLOOM would inflate every peak
    RSS that a system measures with getrusage."""
    code = ("import json, sys; sys.path.insert(0, sys.argv[1]); import bench_peers_models as m; "
            "print(json.dumps(getattr(m, sys.argv[2])(*json.loads(sys.argv[3]))))")
    proc, _ = run_child([sys.executable, "-c", code, os.path.dirname(os.path.abspath(__file__)), what,
                         json.dumps(list(args))], ctx.env, f"building {what}{args}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure_read_bandwidth(ctx):
    """This machine's memory read bandwidth with the benchmark's thread count, as scripts/bench-bandwidth
    measures it (a 1 GiB AVX2 sum, median of 7): the floor of a batch-1 decoding step, which reads
    every weight once. Returns GB/s."""
    proc, _ = run_child([os.path.join(ctx.root, "scripts", "bench-bandwidth"), "--threads", str(ctx.threads)],
                        ctx.env, "measuring read bandwidth")
    return float(proc.stdout.strip().splitlines()[-1].split(": ")[1].split(" GB/s")[0])


def decoder_weight_bytes(family, bytes_per_weight):
    """Weight bytes a decoding step of a decoder-only model reads: every linear of every layer and
    the LM head (the embedding row read is negligible)."""
    k = models.FAMILIES[family]["kwargs"]
    d, f, h, kv = k["hidden_size"], k["intermediate_size"], k["num_attention_heads"], k["num_key_value_heads"]
    head_dim = d // h
    per_layer = d * h * head_dim * 2 + d * kv * head_dim * 2 + 3 * d * f
    return (k["num_hidden_layers"] * per_layer + k["vocab_size"] * d) * bytes_per_weight


def children_cpu_s():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_child(cmd, env, label):
    """(completed process, its CPU seconds). CPU time says what a run costs on a busy machine,
    where wall times mostly measure the neighbours."""
    cpu = children_cpu_s()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{label} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc, children_cpu_s() - cpu


# Our systems by compute dtype (--dtype of lorascope-cli).
OURS = {"ours": "float32", "ours-int8": "int8", "ours-bf16": "bfloat16", "ours-int4": "int4"}

# Systems run with --baseline-cli carry this suffix ("ours-int8@base").
BASE = "@base"

# llama.cpp's systems (scripts/prepare-llama-cpp) by GGUF type; BLOOM only.
LLAMA = {"llama-f32": "F32", "llama-q8_0": "Q8_0", "llama-q4_0": "Q4_0"}

# --isa: every system held to one instruction-set level, each through its own switch (issue 28: the
# AVX2-only table, produced on an AVX-512 machine).
ISA_ENV = {
    # An AVX-512 machine without AMX, on a Sapphire Rapids (MKL and oneDNN, CTranslate2's, reach AMX too).
    "avx512": dict(LORASCOPE_CPU_ISA="avx512", ONEDNN_MAX_CPU_ISA="AVX512_CORE_BF16",
                   DNNL_MAX_CPU_ISA="AVX512_CORE_BF16", CT2_FORCE_CPU_ISA="AVX512",
                   MKL_ENABLE_INSTRUCTIONS="AVX512"),
    "avx2": dict(LORASCOPE_CPU_ISA="avx2", ONEDNN_MAX_CPU_ISA="AVX2", DNNL_MAX_CPU_ISA="AVX2",
                 ATEN_CPU_CAPABILITY="avx2", CT2_FORCE_CPU_ISA="AVX2", MKL_ENABLE_INSTRUCTIONS="AVX2",
                 OPENBLAS_CORETYPE="Haswell"),
    "avx2_vnni": dict(LORASCOPE_CPU_ISA="avx2_vnni", ONEDNN_MAX_CPU_ISA="AVX2_VNNI", DNNL_MAX_CPU_ISA="AVX2_VNNI",
                      ATEN_CPU_CAPABILITY="avx2", CT2_FORCE_CPU_ISA="AVX2", MKL_ENABLE_INSTRUCTIONS="AVX2",
                      OPENBLAS_CORETYPE="Haswell"),
}


def run_ours(ctx, name, model_dir, rows, new_tokens, adapters=None, row_adapters=None, arrival=None,
             static=False, system="ours", cli=None):
    requests = []
    for i, r in enumerate(rows):
        req = {"input_ids": r}
        if row_adapters:
            req["adapter"] = row_adapters[i]
        requests.append(req)
    workload = {"name": name, "params": {"max_new_tokens": new_tokens, "ignore_eos": True}, "requests": requests}
    if arrival:
        workload["arrival"] = arrival
    path = os.path.join(ctx.tmp, f"{name}_ours.json")
    with open(path, "w") as f:
        json.dump(workload, f)
    cmd = [cli or ctx.cli, "bench", "--model", model_dir, "--workload", path, "--threads", str(ctx.threads),
           "--max-batch-size", str(ctx.batch), "--max-batch-tokens", "1000000", "--dtype", OURS[system]]
    if static:
        cmd.append("--static")
    for a, d in adapters or []:
        cmd += ["--adapter", f"{a}={d}"]
    proc, cpu_s = run_child(cmd, ctx.env, f"{name} lorascope-cli bench")
    report = json.loads(proc.stdout)
    report["process_cpu_s"] = cpu_s
    if report["failed_requests"]:
        raise SystemExit(f"{name} ours: {report['failed_requests']} requests failed: {report.get('first_error')}")
    if report["generated_tokens"] != len(rows) * new_tokens:
        raise SystemExit(f"{name} ours: generated {report['generated_tokens']}, expected {len(rows) * new_tokens}")
    report["system"] = "ours-static" if static else system
    return report


def run_peer(ctx, name, system, family, model_dir, ct2_dir, rows, new_tokens, adapters=None, row_adapters=None):
    spec = {"system": system, "family": family, "root": ctx.root, "model_dir": model_dir, "ct2_dir": ct2_dir,
            "prompts": rows, "new_tokens": new_tokens, "batch": ctx.batch, "threads": ctx.threads,
            "adapters": adapters or [], "row_adapters": row_adapters}
    spec_path = os.path.join(ctx.tmp, f"{name}_{system}_spec.json")
    out_path = os.path.join(ctx.tmp, f"{name}_{system}_result.json")
    with open(spec_path, "w") as f:
        json.dump(spec, f)
    worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_peers_workers.py")
    _, cpu_s = run_child([sys.executable, worker, spec_path, out_path], ctx.env, f"{name} {system}")
    with open(out_path) as f:
        result = json.load(f)
    result["process_cpu_s"] = cpu_s  # includes loading and the warm-up and 1-token calls
    return result


def run_llama(ctx, name, system, rows, new_tokens):
    """llama.cpp's llama-batched-bench on the GGUF conversion of the same checkpoint
    (scripts/prepare-llama-cpp): B = min(batch, prompts) sequences of the prompts' mean length,
    new_tokens each. It decodes fixed-length prompts, so the figures stand for a batch of the
    workload's prompts; tokens/s counts the generated tokens over prefill + decoding, as ours."""
    build = "build-avx2" if ctx.isa else "build-native"
    binary = os.path.join(ctx.llama_dir, build, "bin", "llama-batched-bench")
    gguf = os.path.join(ctx.llama_dir, "models", f"bloom-{LLAMA[system].lower()}.gguf")
    for path in (binary, gguf):
        if not os.path.exists(path):
            raise SystemExit(f"{path} missing: run scripts/prepare-llama-cpp first")
    batch = min(ctx.batch, len(rows))
    prompt = round(sum(len(r) for r in rows[:batch]) / batch)
    cmd = [binary, "-m", gguf, "-c", str(batch * (prompt + new_tokens) + 64), "-b", "2048", "-ub", "512",
           "-npp", str(prompt), "-ntg", str(new_tokens), "-npl", str(batch), "-t", str(ctx.threads),
           "-tb", str(ctx.threads)]
    proc, cpu_s = run_child(cmd, ctx.env, f"{name} {system}")
    cells = None
    for line in proc.stdout.splitlines() + proc.stderr.splitlines():
        parts = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(parts) >= 10 and parts[0] == str(prompt) and parts[2] == str(batch):
            cells = [float(c) for c in parts[:10]]
    if not cells:
        raise SystemExit(f"{name} {system}: no result line in llama-batched-bench's output:\n{proc.stdout[-2000:]}")
    t_pp, t_tg = cells[4], cells[6]
    generated = batch * new_tokens
    per_token_ms = t_tg / max(new_tokens - 1, 1) * 1e3
    return {"system": system, "requests": batch, "generated_tokens": generated, "wall_s": t_pp + t_tg,
            "tokens_per_s": generated / (t_pp + t_tg), "process_cpu_s": cpu_s,
            "ttft_ms": {"p50": t_pp * 1e3, "p95": t_pp * 1e3, "estimated": True},
            "per_token_ms": {"p50": per_token_ms, "p95": per_token_ms}, "peak_rss_bytes": 0,
            "llama_cpp": {"prompt_tokens": prompt, "batch": batch, "command": " ".join(cmd)}}


def median_run(runs):
    """The run with the median tokens/s (the lower middle one for an even count), with every run's
    tokens/s beside it: on a shared machine one run of a system can land in a neighbour's burst."""
    ordered = sorted(runs, key=lambda r: r["tokens_per_s"])
    chosen = dict(ordered[(len(ordered) - 1) // 2])
    chosen["repeats_tokens_per_s"] = [r["tokens_per_s"] for r in runs]
    return chosen


def run_workload(ctx, name):
    w = WORKLOADS[name]
    if w.get("policies"):
        sections = w6.run_w6(ctx, build, run_child, models)
        return {"workload": name, "what": w["what"], "family": w["family"], "sections": sections, "results": [],
                "notes": [f"{ctx.repeat} rounds of static, continuous, target, packed, packed target (each round's "
                          "target: that round's static per-token p95); medians over rounds, ratios to static within "
                          "each round",
                          w6.loads_note(sections)]}
    family = w["family"]
    count = min(QUICK["prompts"], w["prompts"]) if ctx.quick else w["prompts"]
    if ctx.prompt_limit:
        count = min(count, ctx.prompt_limit)
    new_tokens = QUICK["new_tokens"] if ctx.quick else w["new_tokens"]
    rows = ctx.prompts[:count]
    if "prompt_range" in w:  # a prompt set of its own (seeded like the shared one)
        lo, hi = w["prompt_range"]
        rows = models.prompts(count, min(lo, QUICK["max_len"]) if ctx.quick else lo,
                              QUICK["max_len"] if ctx.quick else hi, seed=4321)
    model_dir = build(ctx, "build_model", family, os.path.join(ctx.work, "models", family))
    notes = []
    systems = ctx.systems
    # Each repetition runs every system once, in turn, so that a slow spell of the machine spreads
    # over the systems instead of landing on one of them.
    runs = {}
    if ctx.repeat > 1:
        notes.append(f"{ctx.repeat} runs per system, interleaved; each row is the run with the median tokens/s, "
                     "the range of all runs in brackets")
    if w.get("poisson"):
        rate = ctx.w5_rate
        if rate is None:
            # 80% of the saturation request rate ours reached on W1 in this run, so that the stream
            # keeps the batcher busy without an ever-growing queue; W1's all-at-once rate otherwise.
            w1 = next((r for r in ctx.w1_ours if r), None)
            rate = 0.8 * (w1["requests"] / w1["wall_s"]) if w1 else 1.0
        arrival = {"kind": "poisson", "rate": rate, "seed": 7}
        for _ in range(ctx.repeat):
            runs.setdefault("ours", []).append(run_ours(ctx, name, model_dir, rows, new_tokens, arrival=arrival))
            runs.setdefault("ours-static", []).append(
                run_ours(ctx, name, model_dir, rows, new_tokens, arrival=arrival, static=True))
        notes.append(f"Poisson arrivals at {rate:.3f} requests/s (seed 7); peers have no request stream")
        return {"workload": name, "what": w["what"], "family": family, "prompts": count, "new_tokens": new_tokens,
                "arrival": arrival, "results": [median_run(v) for v in runs.values()], "notes": notes}
    adapters = row_adapters = None
    if w.get("adapters"):
        adapters = build(ctx, "build_adapters", model_dir, os.path.join(ctx.work, "adapters", family))
        row_adapters = [adapters[i % len(adapters)][0] for i in range(len(rows))]
    ct2_dir = None
    ct2_systems = [s for s in ("ct2", "ct2-int8") if s in systems]
    if ct2_systems and not adapters:
        ct2_dir = build(ctx, "build_ct2", family, model_dir, os.path.join(ctx.work, "ct2", family))
    # W4's goal is a ratio to W1, and W1 ran minutes earlier: on a shared host its neighbours'
    # load then differs (W4, memory-bound on the adapters' factors, feels it more). So each of our
    # W4 runs comes right after a W1 run of the same system, and the ratio is also given from those
    # pairs (one session's runs: 0.94 across the two workloads' medians, 0.86 from pairs).
    pairs, baseline_failed = {}, set()
    for _ in range(ctx.repeat):
        for ours in (s for s in OURS if s in systems):
            if adapters:
                w1 = run_ours(ctx, "W1", model_dir, rows, new_tokens, system=ours)
            runs.setdefault(ours, []).append(
                run_ours(ctx, name, model_dir, rows, new_tokens, adapters, row_adapters, system=ours))
            if adapters:
                pairs.setdefault(ours, []).append([w1["tokens_per_s"], runs[ours][-1]["tokens_per_s"]])
            if ctx.baseline_cli and not adapters and ours not in baseline_failed:
                # The same system from another build, right after ours: "no regression against the
                # current binary" is then a ratio taken minutes apart at most, not sessions apart.
                try:
                    base = run_ours(ctx, name, model_dir, rows, new_tokens, system=ours, cli=ctx.baseline_cli)
                    base["system"] = ours + BASE
                    runs.setdefault(ours + BASE, []).append(base)
                except SystemExit as e:  # an older build may not know a dtype (int4)
                    baseline_failed.add(ours)
                    notes.append(f"the baseline build did not run {ours}: {str(e).splitlines()[-1][:200]}")
        if "hf" in systems:
            runs.setdefault("hf", []).append(
                run_peer(ctx, name, "hf", family, model_dir, None, rows, new_tokens, adapters, row_adapters))
        for ct2 in ct2_systems if ct2_dir else []:
            runs.setdefault(ct2, []).append(run_peer(ctx, name, ct2, family, model_dir, ct2_dir, rows, new_tokens))
        for llama in (s for s in LLAMA if s in systems and family == "bloom" and not adapters):
            runs.setdefault(llama, []).append(run_llama(ctx, name, llama, rows, new_tokens))
    results = [median_run(v) for v in runs.values()]
    if name == "W7-B1":
        bandwidth = measure_read_bandwidth(ctx)
        for label, per_weight in (("float32", 4), ("int8", 1)):
            gb = decoder_weight_bytes(family, per_weight) / 1e9
            notes.append(f"{label}: {gb:.2f} GB of weights read per token / {bandwidth:.1f} GB/s measured read "
                         f"bandwidth ({ctx.threads} threads, scripts/bench-bandwidth) = "
                         f"{gb / bandwidth * 1e3:.0f} ms per token at the least")
    if name == "W1" and "ours" in runs:
        ctx.w1_ours.append(next(r for r in results if r["system"] == "ours"))
    if "hf" in systems and adapters:
        notes.append("HF + PEFT 0.13.2: one adapter at a time (batches of one adapter's rows); PEFT's "
                     "mixed-adapter generate(adapter_names=...) needs torch >= 2.0 hooks, Debian's torch is 1.13")
    if ct2_systems and adapters:
        notes.append("CTranslate2: no runtime LoRA (adapters must be merged into one model each), not run")
    if pairs:
        notes.append("each of our runs came right after a W1 run of the same system (W1 tokens/s, "
                     "W4 tokens/s in w1_pairs)")
    return {"workload": name, "what": w["what"], "family": family, "prompts": count, "new_tokens": new_tokens,
            "results": results, "notes": notes, "w1_pairs": pairs}


def fmt_ms(d, estimated=False):
    return f"{d['p50']:.0f} / {d['p95']:.0f}" + (" (est.)" if estimated else "")


LABELS = {"ours": "lorascope", "ours-int8": "lorascope int8", "ours-bf16": "lorascope bfloat16",
          "ours-int4": "lorascope int4", "ours-static": "lorascope static", "hf": "HF transformers",
          "ct2": "CTranslate2", "ct2-int8": "CTranslate2 int8", "llama-f32": "llama.cpp F32",
          "llama-q8_0": "llama.cpp Q8_0", "llama-q4_0": "llama.cpp Q4_0"}


def label_of(system):
    if system.endswith(BASE):
        return LABELS[system[:-len(BASE)]] + " (baseline build)"
    return LABELS[system]


def markdown(report):
    """One row per system; "ours / this" compares like with like: our int8 with CTranslate2 int8,
    our float32 with everything else."""
    lines = ["| Workload | System | tokens/s | ours / this | TTFT p50 / p95 ms | per-token p50 / p95 ms | peak RSS MiB |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for w in report["workloads"]:
        by_system = {r["system"]: r for r in w["results"]}
        like = {"ct2-int8": "ours-int8", "llama-q8_0": "ours-int8", "llama-q4_0": "ours-int4"}
        for r in w["results"]:
            if r["system"].endswith(BASE):
                ours = by_system.get(r["system"][:-len(BASE)])
            else:
                ours = None if r["system"].startswith("ours") else by_system.get(like.get(r["system"], "ours"))
            ratio = f"{ours['tokens_per_s'] / r['tokens_per_s']:.2f}x" if ours else ""
            label = label_of(r["system"])
            repeats = r.get("repeats_tokens_per_s", [])
            spread = f" ({min(repeats):.0f}-{max(repeats):.0f})" if len(repeats) > 1 else ""
            lines.append(f"| {w['workload']} | {label} | {r['tokens_per_s']:.1f}{spread} | {ratio} | "
                         f"{fmt_ms(r['ttft_ms'], r['ttft_ms'].get('estimated', False))} | {fmt_ms(r['per_token_ms'])} | "
                         f"{r['peak_rss_bytes'] / 2**20:.0f} |")
    out = "\n".join(lines)
    w1 = next((w for w in report["workloads"] if w["workload"] == "W1"), None)
    w4 = next((w for w in report["workloads"] if w["workload"] == "W4"), None)
    if w1 and w4:
        for system in OURS:
            a = next((r for r in w1["results"] if r["system"] == system), None)
            b = next((r for r in w4["results"] if r["system"] == system), None)
            pairs = w4.get("w1_pairs", {}).get(system, [])
            if a and b:
                out += (f"\n\nW4 / W1 ({LABELS[system]} tokens/s with 8 adapters vs none): "
                        f"{b['tokens_per_s'] / a['tokens_per_s']:.2f}")
                if pairs:
                    ratios = sorted(p[1] / p[0] for p in pairs)
                    out += (f"; from W1 runs right before each W4 run: {ratios[(len(ratios) - 1) // 2]:.2f} "
                            f"(median of {len(ratios)}, {ratios[0]:.2f}-{ratios[-1]:.2f})")
    for w in report["workloads"]:
        if w.get("sections"):
            out += "\n\n" + w6.markdown(w["sections"])
    for w in report["workloads"]:
        for n in w["notes"]:
            out += f"\n- {w['workload']}: {n}"
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--root", required=True)
    ap.add_argument("--cli", default="", help="lorascope-cli (default build/release/bin/lorascope-cli)")
    ap.add_argument("--workloads", default="W1,W2,W3,W4,W5", help="any of " + ", ".join(WORKLOADS))
    ap.add_argument("--systems", default="ours,ours-int8,ours-bf16,hf,ct2,ct2-int8",
                    help="ours (float32), ours-int8, ours-bf16, ours-int4, hf, ct2 (float32), ct2-int8, "
                         "llama-f32, llama-q8_0, llama-q4_0 (BLOOM only; scripts/prepare-llama-cpp)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32, help="largest batch for every system")
    ap.add_argument("--quick", action="store_true", help=f"smoke test: {QUICK}")
    ap.add_argument("--work-dir", default="", help="model cache (default build/bench-peers)")
    ap.add_argument("--out", default="", help="JSON report (default <work-dir>/report.json)")
    ap.add_argument("--w5-rate", type=float, default=None, help="W5 requests/s (default 0.8x ours on W1)")
    ap.add_argument("--llama-dir", default="", help="scripts/prepare-llama-cpp's folder (default build/peers/llama.cpp)")
    ap.add_argument("--prompts", type=int, default=0, help="the first N prompts of each workload (default: all)")
    ap.add_argument("--isa", default="", choices=["", *ISA_ENV],
                    help="hold every system to this instruction-set level (ours, oneDNN, ATen, CTranslate2, "
                         "MKL, OpenBLAS; llama.cpp's AVX2-only build)")
    ap.add_argument("--w6-models", default="t5,bloom", help="W6's models (t5, bloom)")
    ap.add_argument("--w6-no-poisson", action="store_true", help="W6 without its Poisson arrivals")
    ap.add_argument("--w6-prompts", default="8-128",
                    help="W6's prompt lengths in tokens, MIN-MAX (default 8-128; 32-512 is the long-prompt "
                         "variant of docs/benchmarks.md)")
    ap.add_argument("--baseline-cli", default="",
                    help="another lorascope-cli (an older build): each of our systems also runs with it, right "
                         "after ours, as '<system>@base'; 'ours / this' is then new / baseline")
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs per system and workload, interleaved; the table shows the median run and the range")
    args = ap.parse_args()

    class Ctx:
        pass
    ctx = Ctx()
    ctx.root = os.path.abspath(args.root)
    ctx.cli = os.path.abspath(args.cli or os.path.join(ctx.root, "build", "release", "bin", "lorascope-cli"))
    if not os.access(ctx.cli, os.X_OK):
        raise SystemExit(f"{ctx.cli}: lorascope-cli not found; build it or pass --cli")
    ctx.baseline_cli = os.path.abspath(args.baseline_cli) if args.baseline_cli else ""
    if ctx.baseline_cli and not os.access(ctx.baseline_cli, os.X_OK):
        raise SystemExit(f"{ctx.baseline_cli}: --baseline-cli is not an executable")
    ctx.work = os.path.abspath(args.work_dir or os.path.join(ctx.root, "build", "bench-peers"))
    os.makedirs(ctx.work, exist_ok=True)
    ctx.threads, ctx.quick, ctx.w5_rate, ctx.w1_ours = args.threads, args.quick, args.w5_rate, []
    ctx.prompt_limit = args.prompts
    ctx.llama_dir = os.path.abspath(args.llama_dir or os.path.join(ctx.root, "build", "peers", "llama.cpp"))
    if args.repeat < 1:
        raise SystemExit("--repeat must be at least 1")
    ctx.repeat = args.repeat
    ctx.w6_models = [m for m in args.w6_models.split(",") if m]
    if not ctx.w6_models or any(m not in w6.MODELS for m in ctx.w6_models):
        raise SystemExit(f"--w6-models: a comma-separated subset of {','.join(w6.MODELS)}")
    ctx.w6_poisson = not args.w6_no_poisson
    try:
        ctx.w6_prompts = tuple(int(x) for x in args.w6_prompts.split("-"))
        if len(ctx.w6_prompts) != 2 or not 1 <= ctx.w6_prompts[0] <= ctx.w6_prompts[1]:
            raise ValueError
    except ValueError:
        raise SystemExit(f"--w6-prompts: MIN-MAX tokens, 1 <= MIN <= MAX, got '{args.w6_prompts}'")
    ctx.batch = min(args.batch, QUICK["batch"]) if args.quick else args.batch
    ctx.systems = args.systems.split(",")
    ctx.prompts = models.prompts(64, 8, QUICK["max_len"] if args.quick else 128)
    ctx.env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads),
                   OPENBLAS_NUM_THREADS=str(args.threads), CT2_VERBOSE="-1", TOKENIZERS_PARALLELISM="false",
                   **ISA_ENV.get(args.isa, {}))
    ctx.isa = args.isa
    names = [n.strip().upper() for n in args.workloads.split(",") if n.strip()]
    for n in names:
        if n not in WORKLOADS:
            raise SystemExit(f"unknown workload {n}; known: {', '.join(WORKLOADS)}")
    if "W5" in names and "W1" not in names and args.w5_rate is None:
        print("W5 without W1 and without --w5-rate: using 1 request/s", file=sys.stderr)

    report = {"command": " ".join(["scripts/bench-peers"] + sys.argv[3:]), "quick": args.quick,
              "machine": machine_facts(ctx.root, args.threads), "batch": ctx.batch, "workloads": []}
    # The tree's commit need not be the binary's: say which binary ran and when it was built.
    report["machine"]["cli"] = ctx.cli
    report["machine"]["cli_built_utc"] = datetime.datetime.utcfromtimestamp(
        os.path.getmtime(ctx.cli)).strftime("%Y-%m-%d %H:%M UTC")
    if ctx.baseline_cli:
        report["machine"]["baseline_cli"] = ctx.baseline_cli
        report["machine"]["baseline_cli_built_utc"] = datetime.datetime.utcfromtimestamp(
            os.path.getmtime(ctx.baseline_cli)).strftime("%Y-%m-%d %H:%M UTC")
    out = args.out or os.path.join(ctx.work, "report.json")
    start = time.perf_counter()

    def write(complete):
        # Rewritten after every workload so that an interrupted run keeps what it measured.
        report["complete"] = complete
        report["total_wall_s"] = time.perf_counter() - start
        report["machine"]["load_average_end"] = os.getloadavg()
        report["markdown"] = markdown(report)
        with open(out, "w") as f:
            json.dump(report, f, indent=2)

    with tempfile.TemporaryDirectory(prefix="bench-peers-") as tmp:
        ctx.tmp = tmp
        for n in names:
            t = time.perf_counter()
            print(f"{n}: {WORKLOADS[n]['what']} ...", file=sys.stderr, flush=True)
            report["workloads"].append(run_workload(ctx, n))
            report["workloads"][-1]["elapsed_s"] = time.perf_counter() - t
            write(complete=False)
    write(complete=True)
    m = report["machine"]
    print(f"{m['date_utc']}, {m['cpu']} ({' '.join(m['cpu_flags'])}), {m['cores']} cores, {args.threads} threads, "
          f"instruction sets {args.isa or 'all the CPU has'}, commit {m['commit']}, "
          f"load {m['load_average_start'][0]:.1f} -> {m['load_average_end'][0]:.1f}, versions {m['versions']}")
    print(report["markdown"])
    print(f"\ntotal {report['total_wall_s']:.0f} s (including any model builds); JSON: {out}")


if __name__ == "__main__":
    main()
