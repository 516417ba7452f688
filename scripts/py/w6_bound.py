"""The arithmetic bound on W6's continuous-against-static ratios (issue 33), for the goals' sake.

Both policies are simulated step by step on W6's own request lengths (bench_peers_w6.MODELS and
new_tokens, so the same draws), batch 32, all requests at once, prefill free (it costs both
policies the same total work, so it only pulls the ratios towards 1), and a step that costs
t(rows) = a + b x rows. Static takes the requests in waves of 32 (finished rows leave the wave);
continuous keeps 32 rows while any request waits, each newcomer's first token in the step it joins.
So the ratios printed are the best any continuous batcher can do against static on these lengths
for that step cost, whatever its scheduling.

usage: python3 scripts/py/w6_bound.py [--steps-csv FILE]
  --steps-csv  a `lorascope-cli bench --steps-csv` file of a static run: a/b is fitted to the median
               decode-only step time per row count and its row is printed too.
"""
import argparse
import csv
import statistics

from bench_peers_w6 import MODELS, new_tokens

BATCH = 32


def static(lengths, t):
    clock, ttft = 0.0, []
    for w in range(0, len(lengths), BATCH):
        wave = lengths[w:w + BATCH]
        ttft += [clock + t(len(wave))] * len(wave)
        for s in range(max(wave)):
            clock += t(sum(1 for n in wave if n > s))
    return clock, ttft


def continuous(lengths, t):
    clock, ttft, left, nxt = 0.0, [None] * len(lengths), {}, 0
    while nxt < len(lengths) or left:
        while len(left) < BATCH and nxt < len(lengths):
            left[nxt] = lengths[nxt]
            nxt += 1
        clock += t(len(left))
        for i in list(left):
            if ttft[i] is None:
                ttft[i] = clock
            left[i] -= 1
            if left[i] == 0:
                del left[i]
    return clock, ttft


def fitted_ratio(path):
    by_rows = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            if float(r["prefill_ms"]) == 0:
                by_rows.setdefault(int(r["rows"]), []).append(float(r["wall_ms"]))
    xs = [k for k in sorted(by_rows) if len(by_rows[k]) >= 8]
    ys = [statistics.median(by_rows[k]) for k in xs]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    a = my - b * mx
    print(f"{path}: t = {a:.1f} + {b:.2f} x rows ms (a/b = {a / b:.1f})")
    return a / b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps-csv")
    args = ap.parse_args()
    ratios = [0, 8, 16, 32, 64, float("inf")]
    if args.steps_csv:
        ratios.append(fitted_ratio(args.steps_csv))
    print("| model | step a/b | tokens/s continuous / static, at most | TTFT p50 continuous / static, at least |")
    print("|---|---:|---:|---:|")
    for family, (count, (lo, hi)) in MODELS.items():
        lengths = new_tokens(count, lo, hi)
        for k in ratios:
            def t(rows, k=k):
                return 1.0 if k == float("inf") else k + rows
            s_clock, s_ttft = static(lengths, t)
            c_clock, c_ttft = continuous(lengths, t)
            print(f"| {family} | {k:.1f} | {s_clock / c_clock:.3f} | "
                  f"{statistics.median(c_ttft) / statistics.median(s_ttft):.3f} |")


if __name__ == "__main__":
    main()
