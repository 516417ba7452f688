"""Issue 28's contention check: W1 (or another workload) quiet and beside one busy-looping process,
alternately, through scripts/bench-peers; prints each system's median tokens/s in both and the ratio
(two cores with one taken: 0.5x is the fair share, issue 28's goal is 0.4x).

Each round runs the workload quiet, then with `python3 -c 'while True: pass'` beside it (started
before, ended after, by its pid), so that a slow spell of the machine lands on both.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def run(root, args, out, busy):
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
    try:
        cmd = [os.path.join(root, "scripts", "bench-peers"), "--workloads", args.workload, "--systems", args.systems,
               "--threads", str(args.threads), "--out", out]
        if args.cli:
            cmd += ["--cli", args.cli]
        if args.isa:
            cmd += ["--isa", args.isa]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    finally:
        if hog:
            hog.kill()
            hog.wait()
    with open(out) as f:
        report = json.load(f)
    return {r["system"]: r["tokens_per_s"] for r in report["workloads"][0]["results"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--root", required=True)
    ap.add_argument("--workload", default="W1")
    ap.add_argument("--systems", default="ours,ours-int8,ct2,ct2-int8")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cli", default="")
    ap.add_argument("--isa", default="")
    args = ap.parse_args()
    quiet, busy = {}, {}
    with tempfile.TemporaryDirectory(prefix="bench-contention-") as tmp:
        for r in range(args.rounds):
            print(f"round {r + 1}/{args.rounds}: quiet ...", file=sys.stderr, flush=True)
            for k, v in run(args.root, args, os.path.join(tmp, "q.json"), False).items():
                quiet.setdefault(k, []).append(v)
            print(f"round {r + 1}/{args.rounds}: beside a busy loop ...", file=sys.stderr, flush=True)
            for k, v in run(args.root, args, os.path.join(tmp, "b.json"), True).items():
                busy.setdefault(k, []).append(v)
    median = lambda v: sorted(v)[(len(v) - 1) // 2]
    print(f"{args.workload}, {args.threads} threads, {os.cpu_count()} cores, one busy loop beside it, "
          f"{args.rounds} rounds (medians; all runs in brackets); load at the end {os.getloadavg()[0]:.1f}")
    print("| system | quiet tokens/s | beside a busy loop | ratio |\n|---|---:|---:|---:|")
    for k in quiet:
        q, b = median(quiet[k]), median(busy.get(k, [0]))
        print(f"| {k} | {q:.1f} ({', '.join(f'{x:.0f}' for x in quiet[k])}) | "
              f"{b:.1f} ({', '.join(f'{x:.0f}' for x in busy.get(k, []))}) | {b / q:.2f}x |")


if __name__ == "__main__":
    main()
