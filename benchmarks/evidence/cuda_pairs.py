"""The CUDA C++ example pairs on a GPU, quickly and in plain words, before the catalog verifier.

    python -m benchmarks.evidence.cuda_pairs build ID       # compile one pair (load_inline), print the seconds
    python -m benchmarks.evidence.cuda_pairs smoke [ID ...] # each pair on every shape but the largest: max error
                                                            # of both sides, and a rough time of each (not the verdict)

``build`` exists so the shell script can compile the extensions in parallel: the catalog
verifier then finds them in torch's extension cache. ``smoke`` is the raw record if anything
goes wrong later (a wrong result is printed with its shape, not folded into one line).
The verdicts come from ``benchmarks.evidence.verify_catalog``.
"""

from __future__ import annotations

import statistics
import sys
import time

CUDA_PAIRS = ("vectorized-128bit-access", "warp-shuffle-reduction", "cp-async-multistage", "launch-bounds-occupancy",
              "cuda-programmatic-dependent-launch", "persistent-tile-scheduler", "tma-store-epilogue",
              "cuda-pragma-unroll-fixed-trip", "cuda-half2-packed-math", "cuda-fast-math-intrinsics",
              "cuda-fp32-partial-accumulation", "cuda-restrict-readonly-loads", "cuda-smem-padding-bank-conflicts",
              "cuda-int64-offsets", "cuda-syncwarp-warp-private", "cuda-smem-reuse-barrier",
              "cuda-int4-dequant-magic", "cuda-ldmatrix-fragment-loads")


def _harness(sk_id: str):
    from skel.skeletons.pairs import example_path, module_name
    from skel.verifier.harness import Harness, import_file

    return Harness.from_module(import_file(example_path(sk_id), module_name(sk_id)))


def build(sk_id: str) -> None:
    h = _harness(sk_id)
    t0 = time.perf_counter()
    h.module._ext()
    print(f"{sk_id}: built in {time.perf_counter() - t0:.1f} s", flush=True)


def _time_ms(fn, args: tuple, reps: int = 20) -> float:
    import torch

    for _ in range(3):
        fn(*args)
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn(*args)
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def smoke(sk_id: str) -> bool:
    import torch

    from skel.verifier.correctness import compare, dtype_of, fp64, poison

    h = _harness(sk_id)
    h.module._ext()  # built (or read from the cache) first: without a GPU this says so in one line
    ok = True
    for shape in h.shapes:
        if shape == "huge":
            continue  # the catalog verifier checks it; here it would only cost time
        for dtype in h.dtypes:
            dt = dtype_of(dtype)
            atol, rtol = h.tolerance(dtype)
            inputs = h.make_inputs(h.shapes[shape], dt, 1, "cuda")
            ref = h.reference(*(fp64(x) for x in inputs))
            line = [f"{sk_id} {shape} {dtype}:"]
            for side in ("before", "after"):
                outs = h.make_outputs(h.shapes[shape], dt, "cuda")
                for o in outs:
                    poison(o)
                fn = h.launcher(side)
                fn(*inputs, *outs)
                torch.cuda.synchronize()
                checks = [compare(o, r, atol, rtol, i) for i, (o, r) in enumerate(zip(outs, ref))]
                bad = [c for c in checks if not c.ok]
                ok = ok and not bad
                ms = _time_ms(fn, (*inputs, *outs))
                err = max(c.max_abs_error for c in checks)
                line.append(f"{side} {ms:.4f} ms err {err:.2g}{' WRONG ' + str(bad[0].bad) + ' bad' if bad else ''}")
            print("  ".join(line), flush=True)
    return ok


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in ("build", "smoke"):
        raise SystemExit(__doc__)
    ids = sys.argv[2:] or list(CUDA_PAIRS)
    if sys.argv[1] == "build":
        for i in ids:
            build(i)
        return
    failed = [i for i in ids if not smoke(i)]
    print("smoke: all correct" if not failed else f"smoke: WRONG results in {failed}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
