"""The arithmetic bound on W6's continuous-against-static ratios (issue 33), for the goals' sake.

Both policies are simulated step by step on W6's own request lengths (bench_peers_w6.MODELS and
new_tokens, so the same draws), batch 32, all requests at once, prefill free (it costs both
policies the same total work, so it only pulls the ratios towards 1), and a step that costs
t(rows) = a + b x rows. Static takes the requests in waves of 32 (finished rows leave the wave);
continuous keeps 32 rows while any request waits, each newcomer's first token in the step it joins,
first come first served. So the ratios printed are the best a first-come-first-served continuous
batcher can do against static on these lengths for that step cost. The order the requests join in
moves the batch's end and its first tokens: "packed" (`--queue-order pack`) lets requests join
shortest first while more wait than the batch holds, then the last batch's worth longest first; "any
order" bounds every order's tokens/s: no schedule takes fewer steps than all tokens over 32 rows,
nor than the longest request.

The target columns bound the policy with a time-per-output-token target equal to static's per-token
p95 (the gaps between a request's tokens, each the step it decoded in, over all requests): no step
may exceed it, so no step holds more than the R rows whose step fits, and a first-come-first-served
batcher that keeps R rows while requests wait (the most tokens per step under the target, prefill
still free) gives the best tokens/s and TTFT p50 the target allows on these lengths.

With --prefill MODEL=C (a prompt token's prefill, in units of one row's decoding cost b; fitted to
a steps CSV by --steps-csv when not given) the target columns are simulated again with prefill paid for: static
prefills each wave's prompts before its first step; under the target a step's prefill takes only
the time its rows leave below the target (first come first served, split anywhere: optimistic for
an encoder, which cannot be split along its prompt), a request joins once its prompt is done, and
every row cap R from 1 to 32 is tried; the best TTFT p50 any R gives is printed with that R, and
the best tokens/s any R gives. Its no-target columns: continuous with 32 rows, each newcomer's
whole prefill inside the step it joins.

The paid rows are models, not bounds, but for their "any order" column: every prompt's prefill
added at C a token to the fewest-step schedule, against static with its waves' prefill
(any_order_paid: a bound while a step's prefill adds at least C a token, C being static's own
rate). The rest: under the target they spend no tail (the engine's bulk steps
do), and without one they keep the packed order, which is not the best for a TTFT p50 once prompts
cost something. --search-orders N searches for orders that do better (hill climbing over join
orders from the packed one, N tries, seeded; prefill paid, 32 rows, no target) and prints the lowest
TTFT p50 it found, with that order's tokens/s and mean TTFT, and the lowest it found that neither
raises the mean TTFT nor lowers tokens/s against the packed order: how far the p50 alone can be
moved by choosing which requests sit around the median. A search, not a proof.

usage: python3 scripts/py/w6_bound.py [--steps-csv [MODEL=]FILE ...] [--prefill MODEL=C ...] [--search-orders N]
  --steps-csv  a `lorascope-cli bench --steps-csv` file of a static run (of MODEL, t5 or bloom; without
               MODEL=, of every model): a/b is fitted to the median decode-only step time per row
               count and its row is printed too.
"""
import argparse
import csv
import random
import statistics


BATCH = 32


def static(lengths, t):
    clock, ttft = 0.0, []
    for w in range(0, len(lengths), BATCH):
        wave = lengths[w:w + BATCH]
        ttft += [clock + t(len(wave))] * len(wave)
        for s in range(max(wave)):
            clock += t(sum(1 for n in wave if n > s))
    return clock, ttft


def decode(rows, ttft, clock):
    """One step's token for every row (index -> tokens left) that ends at `clock`; done rows leave."""
    for i in list(rows):
        if ttft[i] is None:
            ttft[i] = clock
        rows[i] -= 1
        if rows[i] == 0:
            del rows[i]


def packed(queue, lengths):
    """`--queue-order pack` on requests that all arrived together: shortest first while more wait
    than the batch holds, then longest first."""
    end = len(queue) <= BATCH   # (sort() empties the list while it sorts: decide first)
    queue.sort(key=lambda i: -lengths[i] if end else lengths[i])


def continuous(lengths, t, rows_cap=BATCH, pack=False):
    """First come first served, or packed."""
    clock, ttft, left, queue = 0.0, [None] * len(lengths), {}, list(range(len(lengths)))
    while queue or left:
        if pack:
            packed(queue, lengths)
        while len(left) < rows_cap and queue:
            i = queue.pop(0)
            left[i] = lengths[i]
        clock += t(len(left))
        decode(left, ttft, clock)
    return clock, ttft


def any_order(lengths, t):
    """The fewest steps any schedule takes, each as cheap as its rows allow: all tokens over full
    rows, and the longest request's steps."""
    tokens, steps = sum(lengths), max(-(-sum(lengths) // BATCH), max(lengths))
    return t(0) * steps + (t(1) - t(0)) * tokens


def any_order_paid(lengths, prompt_lens, t, c):
    """The fewest-step schedule of any_order with every prompt's prefill added at c a token: a bound,
    not a model, as long as a step's prefill adds at least c a token to its decoding (c is fitted to
    static's own prefill, whole waves in one pass, the cheapest a prompt token comes; a step that
    prefills beside its rows shares their fixed part a, which any_order already counts once a step).
    Static's clock to hold it against is static_paid's."""
    return any_order(lengths, t) + c * sum(prompt_lens)


def static_tpot_p95(lengths, t):
    """Static's per-token p95: every token after a request's first waits one step of its wave."""
    gaps = []
    for w in range(0, len(lengths), BATCH):
        wave = lengths[w:w + BATCH]
        for s in range(1, max(wave)):
            rows = sum(1 for n in wave if n > s - 1)  # the step that decodes token s + 1 of each row
            gaps += [t(rows)] * sum(1 for n in wave if n > s)
    gaps.sort()
    return gaps[min(len(gaps) - 1, int(0.95 * len(gaps)))]


def static_paid(lengths, prompt_lens, t, c):
    """Static with each wave's prefill (c per prompt token) before its first step."""
    clock, ttft = 0.0, []
    for w in range(0, len(lengths), BATCH):
        wave = lengths[w:w + BATCH]
        clock += c * sum(prompt_lens[w:w + BATCH])
        ttft += [clock + t(len(wave))] * len(wave)
        for s in range(max(wave)):
            clock += t(sum(1 for n in wave if n > s))
    return clock, ttft


def target_paid(lengths, prompt_lens, t, c, target, cap):
    """Continuous under the target with prefill in the time the rows leave, at most `cap` rows."""
    n = len(lengths)
    clock, ttft, running, queue = 0.0, [None] * n, {}, list(range(n))
    prefilling = []  # [index, prefill time left], admitted, in the order they joined
    while queue or running or prefilling:
        while len(running) + len(prefilling) < cap and queue:
            i = queue.pop(0)
            prefilling.append([i, c * prompt_lens[i]])
        step = t(len(running)) if running else 0.0
        spare = max(0.0, target - step) if running else float("inf")
        done = []
        for p in prefilling:
            use = min(spare, p[1])
            p[1] -= use
            spare -= use
            step += use
            if p[1] > 1e-12:
                break
            done.append(p)
        clock += step
        decode(running, ttft, clock)
        for p in done:
            prefilling.remove(p)
            running[p[0]] = lengths[p[0]]
    return clock, ttft


def joined_in(order, lengths, prompt_lens, t, c):
    """Continuous with 32 rows, requests joining in `order`, each newcomer's whole prefill (c a prompt
    token) in the step it joins and its first token at that step's end, as the engine gives it:
    (clock, TTFTs). Not target_paid() with no target, whose newcomers decode from the step after their
    prefill (packed TTFT p50 0.422x against 0.420x on T5, 0.355x against 0.341x on BLOOM); the paid
    rows without a target and round_bounds' paid figures read it (before 2026-12-06 midday they read
    target_paid's)."""
    clock, ttft, left, queue = 0.0, [None] * len(lengths), {}, list(order)
    while queue or left:
        joining = []
        while len(left) < BATCH and queue:
            i = queue.pop(0)
            left[i] = lengths[i]
            joining.append(i)
        clock += t(len(left)) + c * sum(prompt_lens[i] for i in joining)
        decode(left, ttft, clock)
    return clock, ttft


# The engine's weight of a prompt token against a token to decode before it has measured both
# (kPromptWeightPrior, engine/src/engine/batch_runner_prefill.cpp): it orders a batch's first wave.
# Decoder-only models only: an encoder-decoder's prompts weigh nothing (BatchRunner::prompt_weight).
PROMPT_WEIGHT_PRIOR = 0.5
DECODER_ONLY = {"bloom"}


def prompt_weight(t, c):
    """A prompt token's prefill (c) over one row's share of a full step t(BATCH), as the engine
    measures it (BatchRunner::prompt_weight)."""
    return BATCH * c / t(BATCH)


def packed_join_order(lengths, prompt_lens=None, weight=0.0):
    """The order packed() gives requests that all arrived together: shortest first, the last batch's
    worth longest first (by new tokens). With `prompt_lens` (a decoder-only model), as the engine
    orders them since 2026-12-06 afternoon: shortest first by new tokens + w x prompt tokens, w
    PROMPT_WEIGHT_PRIOR for the first wave (ordered before anything is measured) and `weight` for the
    rest."""
    n = len(lengths)
    cut = max(0, n - BATCH)

    def by_work(items, w):
        return sorted(items, key=lambda i: lengths[i] + (w * prompt_lens[i] if prompt_lens else 0.0))
    first = by_work(range(n), PROMPT_WEIGHT_PRIOR if prompt_lens else 0.0)
    head = first[:min(BATCH, cut)]
    rest = by_work(first[len(head):], weight)
    middle = rest[:cut - len(head)]
    return head + middle + sorted(rest[len(middle):], key=lambda i: -lengths[i])


def search_orders(lengths, prompt_lens, t, c, tries, seed=33, weigh_prompts=True):
    """Hill climbing over join orders from the packed one (a swap or a move a try, kept when the TTFT
    p50 is no worse): [(TTFT p50, tokens/s, mean TTFT) against static, prefill paid] for the packed
    order, the lowest p50 found, and the lowest found at no higher mean TTFT and no lower tokens/s."""
    s_clock, s_ttft = static_paid(lengths, prompt_lens, t, c)

    def figures(order):
        clock, ttft = joined_in(order, lengths, prompt_lens, t, c)
        return (statistics.median(ttft) / statistics.median(s_ttft), s_clock / clock,
                statistics.mean(ttft) / statistics.mean(s_ttft))
    packed = packed_join_order(lengths, prompt_lens if weigh_prompts else None, prompt_weight(t, c))
    packed_figures = figures(packed)
    found = []
    for constrained in (False, True):
        rng = random.Random(seed)
        order, best = list(packed), packed_figures
        for _ in range(tries):
            trial = list(order)
            i, j = rng.randrange(len(trial)), rng.randrange(len(trial))
            if rng.random() < 0.5:
                trial[i], trial[j] = trial[j], trial[i]
            else:
                trial.insert(j, trial.pop(i))
            f = figures(trial)
            if f[0] <= best[0] and (not constrained or (f[2] <= packed_figures[2] + 1e-12
                                                        and f[1] >= packed_figures[1] - 1e-12)):
                order, best = trial, f
        found.append(best)
    return [packed_figures] + found


def fit(path):
    """(a, b, c) in ms from a static run's steps CSV: a step of decoding costs a + b x rows (fitted to
    the median decode-only step per row count seen at least 8 times) and a prompt token's prefill c
    (total prefill time over prompt tokens; None without prefill). None when fewer than two row
    counts have 8 decode-only steps (a run too short to fit)."""
    by_rows, prefill_ms, prefill_tokens = {}, 0.0, 0
    with open(path) as f:
        for r in csv.DictReader(f):
            if float(r["prefill_ms"]) == 0:
                by_rows.setdefault(int(r["rows"]), []).append(float(r["wall_ms"]))
            elif int(r["prefill_tokens"]) > 0:
                prefill_ms += float(r["prefill_ms"])
                prefill_tokens += int(r["prefill_tokens"])
    xs = [k for k in sorted(by_rows) if len(by_rows[k]) >= 8]
    if len(xs) < 2:
        return None
    ys = [statistics.median(by_rows[k]) for k in xs]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - b * mx, b, (prefill_ms / prefill_tokens if prefill_tokens else None)


def fitted(path):
    """(a / b, c / b): the step's fixed part over its per-row part, and a prompt token's prefill over b."""
    costs = fit(path)
    if costs is None:
        raise SystemExit(f"{path}: too few decode-only steps to fit a step's cost (8 at two row counts at least)")
    a, b, c_ms = costs
    c = c_ms / b if c_ms else None
    print(f"{path}: t = {a:.1f} + {b:.2f} x rows ms (a/b = {a / b:.1f})"
          + (f"; prefill {c_ms:.3f} ms a prompt token (c = {c:.3f} b)" if c else ""))
    return a / b, c


def round_bounds(path, lengths, prompt_lens, weigh_prompts=True):
    """The figures one round of the harness holds its policies to, from that round's static steps
    CSV (the step costs move with a shared machine's load: W6's BLOOM fitted a/b 8.0 and 13.0 in two static
    runs of one day on the Zen 4, and with them the bound of any order, 1.130x and 1.188x): the most tokens/s any order can
    reach against static, prefill free; the packed order's tokens/s and TTFT p50 against static, prefill
    free (a bound for that order) and paid (a model: each prompt's whole prefill in the step it joins).
    None when the CSV is too short to fit."""
    fitted_costs = fit(path)
    if fitted_costs is None:
        return None
    a, b, c = fitted_costs

    def t(rows):
        return a + b * rows
    s_clock, s_ttft = static(lengths, t)
    k_clock, k_ttft = continuous(lengths, t, pack=True)
    out = {"step_ms": [round(a, 2), round(b, 3)], "prefill_ms_per_token": c,
           "any_order_tokens_per_s": s_clock / any_order(lengths, t),
           "packed_free": {"tokens_per_s": s_clock / k_clock,
                           "ttft_p50": statistics.median(k_ttft) / statistics.median(s_ttft)}}
    if c:
        p_clock, p_ttft = static_paid(lengths, prompt_lens, t, c)
        out["any_order_paid_tokens_per_s"] = p_clock / any_order_paid(lengths, prompt_lens, t, c)
        order = packed_join_order(lengths, prompt_lens if weigh_prompts else None, prompt_weight(t, c))
        q_clock, q_ttft = joined_in(order, lengths, prompt_lens, t, c)
        out["packed_paid"] = {"tokens_per_s": p_clock / q_clock,
                              "ttft_p50": statistics.median(q_ttft) / statistics.median(p_ttft)}
    return out


def main():
    # Here, not at the top: bench_peers_w6 imports this module for round_bounds.
    from bench_peers_models import prompts as seeded_prompts
    from bench_peers_w6 import MODELS, new_tokens
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps-csv", nargs="*", default=[])
    ap.add_argument("--prefill", nargs="*", default=[])
    ap.add_argument("--search-orders", type=int, default=0)
    args = ap.parse_args()
    prefill = {m: float(v) for m, _, v in (item.partition("=") for item in args.prefill)}
    fits = {}
    for item in args.steps_csv:
        model, _, path = item.rpartition("=")
        k, c = fitted(path)
        for family in ([model] if model else MODELS):
            fits.setdefault(family, []).append(k)
            if c is not None and family not in prefill:
                prefill[family] = c
    print("| model | step a/b | tokens/s continuous / static, at most | TTFT p50 continuous / static, at least "
          "| packed: tokens/s, TTFT p50 | any order: tokens/s, at most "
          "| target rows R (of 32) | with the target: tokens/s, at most | TTFT p50, at least (paid rows: a model) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    searched = []
    for family, (count, (lo, hi)) in MODELS.items():
        lengths = new_tokens(count, lo, hi)
        for k in [0, 8, 16, 32, 64, float("inf")] + fits.get(family, []):
            def t(rows, k=k):
                return 1.0 if k == float("inf") else k + rows
            s_clock, s_ttft = static(lengths, t)
            c_clock, c_ttft = continuous(lengths, t)
            target = static_tpot_p95(lengths, t)
            cap = max(r for r in range(1, BATCH + 1) if t(r) <= target + 1e-9)
            g_clock, g_ttft = continuous(lengths, t, cap)
            k_clock, k_ttft = continuous(lengths, t, pack=True)
            print(f"| {family} | {k:.1f} | {s_clock / c_clock:.3f} | "
                  f"{statistics.median(c_ttft) / statistics.median(s_ttft):.3f} | "
                  f"{s_clock / k_clock:.3f}, {statistics.median(k_ttft) / statistics.median(s_ttft):.3f} | "
                  f"{s_clock / any_order(lengths, t):.3f} | {cap} | {s_clock / g_clock:.3f} | "
                  f"{statistics.median(g_ttft) / statistics.median(s_ttft):.3f} |")
            if family in prefill and k != float("inf"):
                c = prefill[family]
                prompt_lens = [len(p) for p in seeded_prompts(count, 8, 128)]
                p_clock, p_ttft = static_paid(lengths, prompt_lens, t, c)
                n_clock, n_ttft = joined_in(range(count), lengths, prompt_lens, t, c)
                order = packed_join_order(lengths, prompt_lens if family in DECODER_ONLY else None,
                                          prompt_weight(t, c))
                k_clock, k_ttft = joined_in(order, lengths, prompt_lens, t, c)
                best, fastest = None, 0.0
                for r in range(1, BATCH + 1):
                    g_clock, g_ttft = target_paid(lengths, prompt_lens, t, c, target, r)
                    ratio = statistics.median(g_ttft) / statistics.median(p_ttft)
                    fastest = max(fastest, p_clock / g_clock)
                    if best is None or ratio < best[0]:
                        best = (ratio, r, p_clock / g_clock)
                print(f"| {family}, prefill {c:.3g} b a token | {k:.1f} | {p_clock / n_clock:.3f} | "
                      f"{statistics.median(n_ttft) / statistics.median(p_ttft):.3f} | "
                      f"{p_clock / k_clock:.3f}, {statistics.median(k_ttft) / statistics.median(p_ttft):.3f} | "
                      f"{p_clock / any_order_paid(lengths, prompt_lens, t, c):.3f} | {best[1]} | "
                      f"{fastest:.3f} (at R = {best[1]}: {best[2]:.3f}) | {best[0]:.3f} |")
                if args.search_orders > 0 and k in fits.get(family, []):
                    searched.append((family, k, c, search_orders(lengths, prompt_lens, t, c, args.search_orders,
                                                                          weigh_prompts=family in DECODER_ONLY)))
    if searched:
        print(f"\nJoin orders searched ({args.search_orders} tries each; prefill paid, 32 rows, no target): "
              "TTFT p50, tokens/s and mean TTFT against static")
        print("| model | a/b | prefill / b | packed | lowest p50 found | lowest p50 found at packed's mean TTFT and tokens/s or better |")
        print("|---|---:|---:|---:|---:|---:|")
        for family, k, c, rows in searched:
            cells = " | ".join(f"{p:.3f}, {tps:.3f}x, mean {m:.3f}" for p, tps, m in rows)
            print(f"| {family} | {k:.1f} | {c:.3g} | {cells} |")


if __name__ == "__main__":
    main()
