"""On a GPU: every naive kernel and each candidate of its shown suggestions (ranked.json), checked against
reference at the timed sizes, then timed with triton.testing.do_bench (original and candidates interleaved in
this one process, 5 repeats; speedup = original time / candidate time per repeat; median and min-max).

    PYTHONUNBUFFERED=1 python benchmarks/gpu/naive/run_gpu.py [--out DIR] [--repeats 5] [--rep-ms 100]

Writes DIR/naive_suite.txt (this output) and DIR/naive_suite.json (every number). DIR defaults to $OUT.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import triton  # noqa: E402
import triton.testing  # noqa: E402

from common import NAMES, compare, load, ranked  # noqa: E402

LINES = []


def say(*a):
    line = " ".join(str(x) for x in a)
    print(line, flush=True)
    LINES.append(line)


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "benchmarks/results/naive-gpu"))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--warmup-ms", type=int, default=25)
    ap.add_argument("--rep-ms", type=int, default=100)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--smoke", action="store_true", help="CPU dry run of this script (TRITON_INTERPRET=1, small "
                    "sizes, wall-clock timer): checks the script, measures nothing")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.smoke:
        dev = torch.device("cpu")

        def bench(fn, warmup, rep, return_mode):
            t = time.perf_counter()
            fn()
            return (time.perf_counter() - t) * 1e3
        triton.testing.do_bench = bench
        torch.cuda.synchronize = lambda: None
        torch.cuda.empty_cache = lambda: None
        say("SMOKE RUN on the CPU: nothing here is a measurement")
    else:
        dev = torch.device("cuda")
        props = torch.cuda.get_device_properties(dev)
        say(f"device: {props.name}, {props.multi_processor_count} SMs; torch {torch.__version__}, "
            f"triton {triton.__version__}")
    try:
        say(subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw",
                            "--format=csv,noheader"], capture_output=True, text=True).stdout.strip())
    except OSError:
        pass
    say(f"timing: triton.testing.do_bench(warmup={args.warmup_ms} ms, rep={args.rep_ms} ms, median of its reps; "
        f"L2 flushed by do_bench before each rep), {args.repeats} repeats, variants interleaved in each repeat; "
        "'original (A/A)' times the original a second time in each repeat: the noise floor")
    rk = ranked()
    results = {}
    t_start = time.time()
    for name in args.only or NAMES:
        entry = rk[name]
        base = load(f"benchmarks/gpu/naive/{name}.py")
        variants = [("original", "-", base)]
        for s in entry["shown"]:
            c = entry["candidates"][s["id"]]
            variants.append((s["id"], s["rank"], load(c["file"], f"{name}__{s['id'].replace('-', '_')}")))
        say("")
        say(f"== {name} ({entry['kernel']}) at {base.SIZES}; shown: {[s['id'] for s in entry['shown']] or 'none'}")
        res = {"sizes": base.SIZES, "variants": {}}
        # correctness at the timed sizes, fresh inputs per variant and trial
        for tag, rank, mod in variants:
            oks, errs = [], []
            for trial in range(2):
                torch.manual_seed(1000 + trial)
                inputs = base.make_inputs(dev, base.CPU_SIZES if args.smoke else None)
                ref = base.reference(*inputs)
                out = mod.launch(*inputs)
                torch.cuda.synchronize()
                ok, err, tol = compare(name, out, ref)
                oks.append(ok)
                errs.append(err)
                del inputs, ref, out
            res["variants"][tag] = {"rank": rank, "correct": all(oks), "max_err": max(errs), "tol": tol,
                                    "times_ms": []}
            say(f"  correct {tag:24s} {'yes' if all(oks) else 'NO'}  max err {max(errs):.3e}  (atol, rtol) {tol}")
        torch.cuda.empty_cache()
        # timing: one set of inputs, the variants interleaved, the order rotated each repeat
        torch.manual_seed(7)
        inputs = base.make_inputs(dev, base.CPU_SIZES if args.smoke else None)
        timed = [(t, m) for t, _, m in variants] + [("original (A/A)", base)]
        res["variants"]["original (A/A)"] = {"rank": "-", "times_ms": []}
        for _tag, mod in timed:
            mod.launch(*inputs)  # compile outside the timing
        torch.cuda.synchronize()
        for r in range(args.repeats):
            order = timed[r % len(timed):] + timed[:r % len(timed)]
            for tag, mod in order:
                t = triton.testing.do_bench(lambda m=mod, x=inputs: m.launch(*x), warmup=args.warmup_ms,
                                            rep=args.rep_ms, return_mode="median")
                res["variants"][tag]["times_ms"].append(t)
        for tag, _, mod in variants:
            best = getattr(getattr(mod, mod.KERNEL), "best_config", None)
            if best is not None:
                say(f"  autotune picked for {tag}: {best}")
        del inputs
        torch.cuda.empty_cache()
        t0 = res["variants"]["original"]["times_ms"]
        for tag, v in res["variants"].items():
            if tag == "original":
                v["speedup"] = None
                say(f"  time  {tag:24s} median {statistics.median(t0):.4f} ms  (min {min(t0):.4f}, max {max(t0):.4f})")
                continue
            sp = [a / b for a, b in zip(t0, v["times_ms"])]
            v["speedups"] = sp
            v["speedup"] = statistics.median(sp)
            v["spread"] = [min(sp), max(sp)]
            say(f"  time  {tag:24s} median {statistics.median(v['times_ms']):.4f} ms  speedup {v['speedup']:.3f}x "
                f"({min(sp):.3f}-{max(sp):.3f})")
        results[name] = res
    say("")
    say(f"(measured in {time.time() - t_start:.0f} s)")
    say("")
    say("| kernel | suggestion (rank) | speedup median (min-max over repeats) | correct? | A/A noise of the original |")
    say("|---|---|---|---|---|")
    top1, best3, slow, top1_shown_only = [], [], [], []
    for name, res in results.items():
        v = res["variants"]
        aa = v["original (A/A)"]
        noise = f"{aa['speedup']:.3f}x ({aa['spread'][0]:.3f}-{aa['spread'][1]:.3f})"
        cands = [(t, x) for t, x in v.items() if t not in ("original", "original (A/A)")]
        if not cands:
            say(f"| {name} | none shown (counts 1.00x) | - | - | {noise} |")
            top1.append(1.0)
            best3.append(1.0)
            continue
        for t, x in sorted(cands, key=lambda c: c[1]["rank"]):
            say(f"| {name} | {t} ({x['rank']}) | {x['speedup']:.3f}x ({x['spread'][0]:.3f}-{x['spread'][1]:.3f}) | "
                f"{'yes' if x['correct'] else 'NO'} (max err {x['max_err']:.2e}) | {noise} |")
            if x["speedup"] < 0.97:
                slow.append(f"{name}: {t} (rank {x['rank']}) {x['speedup']:.3f}x")
        first = min(cands, key=lambda c: c[1]["rank"])[1]
        top1.append(first["speedup"])
        top1_shown_only.append(first["speedup"])
        best3.append(max(x["speedup"] for t, x in cands if x["rank"] <= 3))
    say("")
    say(f"geomean of top-1 speedups over {len(top1)} kernels (a kernel with no shown suggestion counts 1.00x): "
        f"{geomean(top1):.3f}x")
    say(f"geomean of top-1 speedups over the {len(top1_shown_only)} kernels with a shown suggestion: "
        f"{geomean(top1_shown_only):.3f}x")
    say(f"geomean of best-of-top-3 speedups over {len(best3)} kernels (the best shown candidate's median, not "
        f"clamped at 1.00x; none shown counts 1.00x): {geomean(best3):.3f}x")
    say("shown suggestions slower than 0.97x: " + ("; ".join(slow) if slow else "none"))
    bad = [f"{n}: {t}" for n, r in results.items() for t, x in r["variants"].items()
           if "correct" in x and not x["correct"]]
    say("incorrect at the timed sizes: " + ("; ".join(bad) if bad else "none"))
    with open(os.path.join(args.out, "naive_suite.txt"), "w") as f:
        f.write("\n".join(LINES) + "\n")
    with open(os.path.join(args.out, "naive_suite.json"), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
