"""Run one skeleton example's *before* side on the GPU, for a profiler to watch.

    python -m benchmarks.evidence.profile_driver run ID SHAPE [--mode plain|torch|proton] [--out FILE] [--reps N]
    python -m benchmarks.evidence.profile_driver summary OUT

``run`` imports ``skel/skeletons/catalog/<id>/example.py`` (skel's harness format: SHAPES,
make_inputs, make_outputs, the ``before`` launcher), makes the inputs of SHAPE on cuda,
launches ``before`` once to compile, then REPS more times:

- ``plain``: nothing else; a profiler outside (``ncu ... python this run ...``) records it;
- ``torch``: inside ``torch.profiler`` (CPU + CUDA activities), exported as a chrome trace
  to OUT;
- ``proton``: inside ``triton.profiler`` (proton, tree data), written to OUT (``.hatchet``
  is added by proton). The before kernels get a ``launch_metadata`` that reports the
  harness's own ``bytes_moved`` and ``flops`` per launch (flops under the operand width:
  flops16 for fp16/bf16), so proton has throughput figures to compare with the peak.

``summary`` reads every ``suggest_*.json`` under OUT (written by
benchmarks/gpu/profile_samples_gpu.sh) and prints, per run, the bound the profile gave, the
metric that decided it and the top suggestions: the ranking each bottleneck produced.

Everything printed goes to stderr, so ncu's CSV on stdout stays clean.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def log(msg: str) -> None:
    print(f"[profile_driver] {msg}", file=sys.stderr, flush=True)


def _width(dtype) -> int:
    import torch

    return {torch.float16: 16, torch.bfloat16: 16, torch.float32: 32, torch.float64: 64}.get(dtype, 8)


def _attach_metadata(module, h, shape: dict, dtype) -> list[str]:
    """Report the harness's bytes and flops on every launch of a before kernel (proton reads
    them); returns the kernels it could attach to."""
    bytes_moved = h.bytes_moved(shape, dtype)
    flops = h.flops(shape, dtype)
    meta: dict = {}
    if bytes_moved:
        meta["bytes"] = int(bytes_moved)
    if flops:
        meta[f"flops{_width(dtype)}"] = int(flops)
    attached = []
    for name in dir(module):
        obj = getattr(module, name)
        fn = obj
        while hasattr(fn, "fn") and not hasattr(fn, "launch_metadata"):  # autotuner / heuristics wrappers
            fn = fn.fn
        if name.startswith("before") and hasattr(fn, "launch_metadata") and hasattr(fn, "arg_names"):
            fn.launch_metadata = lambda grid, metadata, args: dict(meta)
            attached.append(name)
    return attached


def run(sk_id: str, shape_name: str, mode: str, out: str | None, reps: int, dtype_name: str | None,
        device: str = "cuda") -> int:
    import os

    if device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"  # a dry run of this script's own paths; nothing to profile
    import torch

    from skel.skeletons.pairs import example_path, module_name
    from skel.verifier.correctness import dtype_of
    from skel.verifier.harness import Harness, import_file

    if device == "cuda" and not torch.cuda.is_available():
        log("no CUDA device visible to torch")
        return 2
    module = import_file(example_path(sk_id), module_name(sk_id))
    h = Harness.from_module(module)
    if shape_name not in h.shapes:
        log(f"{sk_id}: no shape {shape_name!r} (has: {', '.join(h.shapes)})")
        return 2
    shape = h.shapes[shape_name]
    dtype = dtype_of(dtype_name or h.dtypes[0])
    inputs = h.make_inputs(shape, dtype, 0, device)
    outputs = h.make_outputs(shape, dtype, device)
    before = h.launcher("before")
    t0 = time.perf_counter()
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    before(*inputs, *outputs)  # compiles
    sync()
    log(f"{sk_id} {shape_name} {shape} {dtype}: first call (compile + run) {time.perf_counter() - t0:.2f} s")

    def launches() -> float:
        start = time.perf_counter()
        for _ in range(reps):
            before(*inputs, *outputs)
        sync()
        return (time.perf_counter() - start) / reps * 1e6

    if mode == "plain":
        log(f"{reps} launches, {launches():.1f} µs each (wall, incl. launch)")
    elif mode == "torch":
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            per = launches()
        assert out, "--out is needed with --mode torch"
        prof.export_chrome_trace(out)
        log(f"{reps} launches, {per:.1f} µs each; chrome trace -> {out}")
    elif mode == "proton":
        import triton.profiler as proton

        attached = _attach_metadata(module, h, shape, dtype)
        log(f"launch_metadata (bytes/flops from the harness) on: {', '.join(attached) or 'nothing'}")
        assert out, "--out is needed with --mode proton"
        proton.start(str(Path(out).with_suffix("")), hook="triton")
        per = launches()
        proton.finalize()
        log(f"{reps} launches, {per:.1f} µs each; proton tree -> {Path(out).with_suffix('')}.hatchet")
    return 0


def summary(out_dir: str) -> int:
    rows = []
    for f in sorted(Path(out_dir).glob("suggest_*.json")):
        try:
            data = json.loads(f.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            rows.append(f"{f.name}: unreadable ({exc})")
            continue
        for k in data.get("kernels", []):
            p = k.get("profile") or {}
            bound = p.get("bound") or ("unknown" if p else "none (code only)")
            metric = f"{p.get('metric')} {p.get('value')}{p.get('unit', '')}" if p.get("metric") else ""
            top = ", ".join(f"{s['id']}({s['components']['bound']:.1f})" for s in k.get("suggestions", [])[:6])
            rows.append(f"{f.stem[8:]:<34} {k['kernel']:<14} {bound:<18} {metric:<70}\n    top: {top}")
            notes = [n for n in k.get("notes", []) if n.startswith("profile")]
            rows.extend(f"    note: {n}" for n in notes)
    print("\n".join(rows) if rows else f"no suggest_*.json under {out_dir}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("id")
    r.add_argument("shape")
    r.add_argument("--mode", choices=["plain", "torch", "proton"], default="plain")
    r.add_argument("--out")
    r.add_argument("--reps", type=int, default=5)
    r.add_argument("--dtype")
    r.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                   help="cpu: Triton's interpreter, to dry-run this script without a GPU")
    s = sub.add_parser("summary")
    s.add_argument("out")
    a = ap.parse_args()
    if a.cmd == "summary":
        return summary(a.out)
    return run(a.id, a.shape, a.mode, a.out, a.reps, a.dtype, a.device)


if __name__ == "__main__":
    sys.exit(main())
