"""W6 of scripts/bench-peers: batching policies on requests of different lengths (issue 33).

Two models, each with requests whose max_new_tokens are uniform (EOS ignored), all at once and as
a Poisson stream at ~0.9x the request rate that model reached all at once in the same run; five
policies in the same run, taking turns: static batching, continuous batching with the budget in
time and no target, and continuous batching with a time-per-output-token target equal to static
batching's per-token p95 on the same arrival in the same round; then both continuous policies again
with the queue packed by length (`--queue-order pack`: requests that arrived together join shortest
first, the last batch's worth longest first). Ours only: neither peer batches continuously. Goodput
counts the requests within static's TTFT p50 and that per-token target.
"""
import csv
import json
import os
import random
import statistics

import w6_bound

MODELS = {
    # family: (requests, [min, max] new tokens), prompts 8-128 tokens from the harness's seeded list
    "t5": (128, (8, 256)),
    "bloom": (64, (8, 128)),
}
POISSON_SHARE = 0.9
POISSON_SEED = 7
POLICIES = ("static", "continuous", "target", "packed", "packed target")


def new_tokens(count, lo, hi, seed=33):
    rng = random.Random(seed)
    return [rng.randint(lo, hi) for _ in range(count)]


def write_workload(ctx, name, prompts, lengths, arrival):
    requests = [{"input_ids": p, "params": {"max_new_tokens": n}} for p, n in zip(prompts, lengths)]
    workload = {"name": name, "params": {"ignore_eos": True}, "requests": requests}
    if arrival:
        workload["arrival"] = arrival
    path = os.path.join(ctx.tmp, f"{name}.json")
    with open(path, "w") as f:
        json.dump(workload, f)
    return path


def requests_figures(path, ttft_target, tpot_target):
    """Goodput against targets known only after the static run, from bench's --requests-csv."""
    with open(path) as f:
        rows = list(csv.DictReader(f))
    good = sum(1 for r in rows if r["reason"] in ("length", "eos", "stop") and r["ttft_ms"]
               and float(r["ttft_ms"]) <= ttft_target and float(r["tpot_ms"]) <= tpot_target)
    return {"requests": len(rows), "good": good, "ttft_target_ms": ttft_target, "tpot_target_ms": tpot_target}


def run_policy(ctx, run_child, name, model_dir, workload, policy, target_ms, expected_tokens):
    csv_path = os.path.join(ctx.tmp, f"{name}_{policy.replace(' ', '_')}_requests.csv")
    cmd = [ctx.cli, "bench", "--model", model_dir, "--workload", workload, "--threads", str(ctx.threads),
           "--max-batch-size", str(ctx.batch), "--max-batch-tokens", "1000000", "--requests-csv", csv_path]
    steps_path = None
    if policy == "static":
        steps_path = os.path.join(ctx.tmp, f"{name}_static_steps.csv")
        cmd += ["--batching", "static", "--steps-csv", steps_path]
    if policy.endswith("target"):
        cmd += ["--tpot-target-ms", f"{target_ms:.3f}"]
    if policy.startswith("packed"):
        cmd += ["--queue-order", "pack"]
    proc, cpu_s = run_child(cmd, ctx.env, f"{name} {policy}")
    report = json.loads(proc.stdout)
    if report["failed_requests"] or report["generated_tokens"] != expected_tokens:
        raise SystemExit(f"{name} {policy}: {report['failed_requests']} failed, {report['generated_tokens']} tokens "
                         f"(expected {expected_tokens}): {report.get('first_error')}")
    report.update(policy=policy, process_cpu_s=cpu_s, requests_csv=csv_path, steps_csv=steps_path,
                  load_average=os.getloadavg())
    return report


def one_arrival(ctx, run_child, name, model_dir, workload, expected_tokens, bound_of=None):
    """ctx.repeat rounds of every policy, static first (target = that round's static p95). With
    `bound_of` (all at once), each static run carries its round's bounds (w6_bound.round_bounds)."""
    runs = {p: [] for p in POLICIES}
    for _ in range(ctx.repeat):
        static = run_policy(ctx, run_child, name, model_dir, workload, "static", 0, expected_tokens)
        if bound_of:
            static["bounds"] = bound_of(static["steps_csv"])
        runs["static"].append(static)
        target = static["per_token_ms"]["p95"]
        for p in POLICIES[1:]:
            runs[p].append(run_policy(ctx, run_child, name, model_dir, workload, p, target, expected_tokens))
    for round_index in range(ctx.repeat):
        static = runs["static"][round_index]
        for p in POLICIES:
            r = runs[p][round_index]
            r["goodput_vs_static"] = requests_figures(r["requests_csv"], static["ttft_ms"]["p50"],
                                                      static["per_token_ms"]["p95"])
    return runs


def median_of(runs, key):
    values = sorted(key(r) for r in runs)
    return values[(len(values) - 1) // 2]


def summary(runs):
    """Per policy: the median of each figure over the rounds, and of each ratio to static's figure
    in the same round (ratios of medians would pair runs from different rounds)."""
    out = {}
    for p, rs in runs.items():
        statics = runs["static"]
        out[p] = {
            "tokens_per_s": median_of(rs, lambda r: r["tokens_per_s"]),
            "tokens_per_s_range": [min(r["tokens_per_s"] for r in rs), max(r["tokens_per_s"] for r in rs)],
            "mean_batch_rows": median_of(rs, lambda r: r["mean_batch_rows"]),
            "rows_while_queued": median_of(rs, lambda r: r["rows_while_queued"]["mean_decoding_rows"]),
            "ttft_p50_ms": median_of(rs, lambda r: r["ttft_ms"]["p50"]),
            "ttft_mean_ms": median_of(rs, lambda r: r["ttft_ms"]["mean"]),
            "per_token_p95_ms": median_of(rs, lambda r: r["per_token_ms"]["p95"]),
            "e2e_ms": {q: median_of(rs, lambda r, q=q: r["e2e_ms"][q]) for q in ("p50", "p95", "p99")},
            "queue_p50_ms": median_of(rs, lambda r: r["queue_ms"]["p50"]),
            "goodput": median_of(rs, lambda r: r["goodput_vs_static"]["good"]),
            "requests": rs[0]["goodput_vs_static"]["requests"],
            "tpot_target_ms": median_of(rs, lambda r: r["tpot_target_ms"]),
            "vs_static": {
                "tokens_per_s": median_of(range(len(rs)), lambda i: rs[i]["tokens_per_s"] / statics[i]["tokens_per_s"]),
                "ttft_p50": median_of(range(len(rs)), lambda i: rs[i]["ttft_ms"]["p50"] / statics[i]["ttft_ms"]["p50"]),
                "ttft_mean": median_of(range(len(rs)), lambda i: rs[i]["ttft_ms"]["mean"] / statics[i]["ttft_ms"]["mean"]),
                "per_token_p95": median_of(range(len(rs)), lambda i: rs[i]["per_token_ms"]["p95"] / statics[i]["per_token_ms"]["p95"]),
            },
            "loads": [round(r["load_average"][0], 1) for r in rs],
        }
        bounds = [r.get("bounds") for r in statics]
        if p != "static" and all(bounds):
            # Each round's tokens/s against static over that round's bound of any order: how much of
            # what any order could gain over static this policy took (1: all of it).
            out[p]["of_any_order_bound"] = median_of(range(len(rs)), lambda i: (
                rs[i]["tokens_per_s"] / statics[i]["tokens_per_s"]) / bounds[i]["any_order_tokens_per_s"])
    return out


def run_w6(ctx, build, run_child, models):
    """The W6 workload entry of the report: per model and arrival, every run and their summary."""
    families = ctx.w6_models if not ctx.quick else ctx.w6_models[:1]
    sections = []
    for family in families:
        count, (lo, hi) = MODELS[family]
        if ctx.quick:
            count, lo, hi = 8, 4, 16
        model_dir = build(ctx, "build_model", family, os.path.join(ctx.work, "models", family))
        plo, phi = ctx.w6_prompts
        prompts = models.prompts(count, 8, 32) if ctx.quick else models.prompts(count, plo, phi)
        lengths = new_tokens(count, lo, hi)
        expected = sum(lengths)
        name = f"W6-{family}" + ("" if ctx.quick or (plo, phi) == (8, 128) else f"-prompts-{plo}-{phi}")
        prompt_lens = [len(p) for p in prompts]

        def bound_of(steps_csv):
            return w6_bound.round_bounds(steps_csv, lengths, prompt_lens, family in w6_bound.DECODER_ONLY)
        all_at_once = one_arrival(ctx, run_child, name, model_dir, write_workload(ctx, name, prompts, lengths, None),
                                  expected, bound_of)
        arrivals = [("all at once", all_at_once, {"kind": "all"})]
        if ctx.w6_poisson:
            saturated = median_of(all_at_once["continuous"], lambda r: r["requests"] / r["wall_s"])
            arrival = {"kind": "poisson", "rate": POISSON_SHARE * saturated, "seed": POISSON_SEED}
            stream_name = f"{name}-poisson"
            stream = one_arrival(ctx, run_child, stream_name, model_dir,
                                 write_workload(ctx, stream_name, prompts, lengths, arrival), expected)
            arrivals.append(("Poisson", stream, arrival))
        for label, runs, arr in arrivals:
            sections.append({"family": family, "requests": count, "new_tokens": [lo, hi],
                             "prompt_tokens": [8, 32] if ctx.quick else [plo, phi], "arrival": arr,
                             "label": label, "summary": summary(runs),
                             "runs": {p: [{k: v for k, v in r.items() if k not in ("requests_csv", "steps_csv")} for r in rs]
                                      for p, rs in runs.items()}})
    return sections


def markdown(sections):
    lines = ["| model | arrival | policy | tokens/s (range) | vs static | rows while queued | mean rows | "
             "TTFT p50 ms (vs static) | TTFT mean ms (vs static) | per-token p95 ms (target) | e2e p50 / p95 / p99 ms | "
             "queue p50 ms | goodput |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s in sections:
        arrival = s["label"] if s["arrival"]["kind"] == "all" else f"Poisson {s['arrival']['rate']:.2f}/s"
        model = s["family"] + ("" if s.get("prompt_tokens", [8, 128]) == [8, 128] else
                               " (prompts {}-{})".format(*s["prompt_tokens"]))
        for p in POLICIES:
            f = s["summary"][p]
            vs = f["vs_static"]
            target = f" ({f['tpot_target_ms']:.0f})" if p.endswith("target") else ""
            lines.append(
                f"| {model} | {arrival} | {p} | {f['tokens_per_s']:.1f} ({f['tokens_per_s_range'][0]:.0f}-"
                f"{f['tokens_per_s_range'][1]:.0f}) | {vs['tokens_per_s']:.2f}x | {f['rows_while_queued']:.1f} | "
                f"{f['mean_batch_rows']:.1f} | {f['ttft_p50_ms']:.0f} ({vs['ttft_p50']:.2f}x) | "
                f"{f['ttft_mean_ms']:.0f} ({vs['ttft_mean']:.2f}x) | "
                f"{f['per_token_p95_ms']:.1f}{target} | {f['e2e_ms']['p50']:.0f} / {f['e2e_ms']['p95']:.0f} / "
                f"{f['e2e_ms']['p99']:.0f} | {f['queue_p50_ms']:.0f} | {f['goodput']}/{f['requests']} |")
    for s in sections:
        bounds = [r.get("bounds") for r in s["runs"]["static"]]
        if not bounds or not all(bounds):
            continue
        lines.append("")
        lines.append(f"{s['family']}, all at once, each round's bounds from its static steps (a step of decoding "
                     "a + b x rows ms; prefill free unless paid):")
        for i, b in enumerate(bounds):
            paid = b.get("packed_paid")
            lines.append(
                f"- round {i + 1}: a = {b['step_ms'][0]:.1f}, b = {b['step_ms'][1]:.2f} ms; tokens/s of any order "
                f"<= {b['any_order_tokens_per_s']:.3f}x static's"
                + (f" ({b['any_order_paid_tokens_per_s']:.3f}x with every prompt's prefill at static's rate)"
                   if "any_order_paid_tokens_per_s" in b else "")
                + f"; packed <= {b['packed_free']['tokens_per_s']:.3f}x, "
                f"TTFT p50 >= {b['packed_free']['ttft_p50']:.3f}x"
                + (f" (prefill paid, a model: {paid['tokens_per_s']:.3f}x, {paid['ttft_p50']:.3f}x)" if paid else ""))
        shares = ", ".join(f"{p} {s['summary'][p]['of_any_order_bound']:.2f}" for p in POLICIES[1:]
                           if "of_any_order_bound" in s["summary"][p])
        lines.append(f"- tokens/s over static as a share of the round's any-order bound (median): {shares}")
    return "\n".join(lines)


def loads_note(sections):
    loads = [x for s in sections for p in POLICIES for x in s["summary"][p]["loads"]]
    return f"1-minute load average at the end of each run: {min(loads):.1f}-{max(loads):.1f} (median {statistics.median(loads):.1f})"
