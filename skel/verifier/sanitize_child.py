"""One launch of a candidate, for compute-sanitizer to watch (:mod:`skel.verifier.sanitizer`).

    python -m skel.verifier.sanitize_child HARNESS CANDIDATE [--launcher NAME] [--shape S] [--dtype D] [--seed N]
    python -m skel.verifier.sanitize_child PROBLEM CANDIDATE --kernelbench

Loads the problem as the verifier does (:class:`skel.verifier.harness.Harness`, or
:class:`skel.verifier.kernelbench.Problem`), makes the inputs of one shape on the GPU, calls
the candidate once and synchronises. An autotuned kernel runs each of its configs once (its
benchmark is replaced by a single call), so memcheck sees every config, not the winner only.
Exit 0 and a last line ``SKEL-SANITIZE-LAUNCHED ...`` when the launch returned.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

LAUNCHED = "SKEL-SANITIZE-LAUNCHED"  # = sanitizer.LAUNCHED: the last line once the launch has returned


def _one_call_benchmarks() -> None:
    """Every autotune config is run once instead of benchmarked (memcheck is slow, and every
    config is code the candidate may run)."""
    from triton.runtime.autotuner import Autotuner  # triton: optional (the verify extra)

    if not hasattr(Autotuner, "do_bench"):  # an older Triton: its configs are benchmarked as usual
        return

    def once(kernel_call: Any, quantiles: Any = None, **_: Any) -> list[float]:
        import torch  # torch: heavy, the child imports it once it runs

        kernel_call()
        torch.cuda.synchronize()
        return [1.0, 1.0, 1.0] if quantiles else 1.0  # type: ignore[return-value]

    Autotuner.do_bench = property(lambda self: once)  # type: ignore[assignment,method-assign]


def _launch_harness(args: argparse.Namespace) -> str:
    import torch  # torch: heavy, the child imports it once it runs

    from skel.verifier.correctness import dtype_of  # after torch, as the verifier imports them
    from skel.verifier.harness import Harness, import_file  # after torch, as the verifier imports them

    h = Harness.from_file(Path(args.harness))  # first: a generated harness prepares what kernel files import
    same = Path(args.candidate).resolve() == h.path.resolve()
    mod = h.module if same else import_file(Path(args.candidate))
    if args.launcher:
        fn = getattr(mod, args.launcher, None)
        if not callable(fn):
            raise SystemExit(f"{args.candidate}: no launcher {args.launcher!r}")
    else:
        bind = getattr(h.module, "launcher_for", None)
        fn = bind(mod) if callable(bind) else getattr(mod, "run", None)
        if not callable(fn):
            raise SystemExit(f"{args.candidate}: no launcher (give --launcher NAME)")
    shape = args.shape or (h.gpu_shapes or tuple(h.shapes))[0]
    dtype = args.dtype or h.dtypes[0]
    dt = dtype_of(dtype)
    inputs = h.make_inputs(h.shapes[shape], dt, args.seed, "cuda")
    outputs = h.make_outputs(h.shapes[shape], dt, "cuda")
    fn(*inputs, *outputs)
    torch.cuda.synchronize()
    return f"{shape} {dtype}"


def _launch_kernelbench(args: argparse.Namespace) -> str:
    import torch  # torch: heavy, the child imports it once it runs

    from skel.verifier import kernelbench as kb  # after torch, as the verifier imports them
    from skel.verifier.harness import import_file  # after torch, as the verifier imports them

    orig = import_file(Path(args.harness))
    same = Path(args.candidate).resolve() == Path(args.harness).resolve()
    cand = orig if same else import_file(Path(args.candidate))
    p = kb.Problem(orig, cand, "cuda", args.seed, kb.DEFAULT_TOLERANCE, args.dtype)
    p.build(reference=False)
    inputs = p.inputs({}, args.seed)
    with torch.no_grad():
        p.model_new(*inputs)
    torch.cuda.synchronize()
    return "get_inputs()"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m skel.verifier.sanitize_child", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("harness", help="the harness file (with --kernelbench: the KernelBench problem)")
    ap.add_argument("candidate")
    ap.add_argument("--launcher", default=None)
    ap.add_argument("--shape", default=None)
    ap.add_argument("--dtype", default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--kernelbench", action="store_true")
    args = ap.parse_args(argv)
    import torch  # torch: heavy, imported once the arguments parse

    if not torch.cuda.is_available():
        print("sanitize_child: no GPU (torch sees none)", file=sys.stderr)
        return 2
    _one_call_benchmarks()
    where = _launch_kernelbench(args) if args.kernelbench else _launch_harness(args)
    print(f"{LAUNCHED} {where}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
