"""How long machine-code facts take: a cold compile and a cached lookup (issue #35, item 2).

For each real kernel below (liger-kernel 0.8.5 and fla-core 0.6.0 from the venv's
site-packages), :func:`skel.kernels.machine.machine_facts` compiles it offline for sm_90 in
a child process, ``--runs`` times with the cache off (median and min-max), then looks it up
``--lookups`` times in the cache (median, in this process). It prints one markdown table:
the facts (registers, spills, shared memory, occupancy, widest global load, MMA, MUFU) and
the times, with the cold time split into the child's running of the file (imports torch
and the package) and Triton's compile plus ptxas.

    python -m benchmarks.performance.machine_facts [--runs 3] [--lookups 20] [--out FILE.md]

Targets: a new compile <= 1 s per kernel; a cached lookup much under 150 ms.

fla-core installed without its dependencies lacks ``einops``, which ``fla`` imports: put it
on PYTHONPATH (``pip install --no-deps --target DIR einops``) or the fla row says so.

Launch parameters are hard-coded per kernel from reading each launcher (shapes of a Llama-3
8B layer: hidden 4096, FFN 14336, vocabulary 128256, bf16 activations), as the launcher
would pass them on an H100:

- liger ``_rms_norm_forward_kernel`` (rms_norm.py ``rms_norm_forward``): ``calculate_settings(4096)``
  gives BLOCK_SIZE 4096, num_warps 8; casting_mode 0 (llama), elementwise_affine True; RSTD
  fp32; strides and n_cols 4096 (divisible by 16); eps and offset floats.
- liger ``_swiglu_forward_kernel`` (swiglu.py ``swiglu_forward``): n_cols 14336 (a constexpr),
  ``calculate_settings`` gives BLOCK_SIZE 16384, num_warps 16 (not Blackwell, so not tiled).
- liger ``liger_cross_entropy_kernel`` (cross_entropy.py ``cross_entropy_forward``): V 128256,
  BLOCK_SIZE min(32768, next_pow2(V)) = 32768, num_warps 32 (Hopper); int64 targets; the
  strides that are 1 (Y, loss) specialise to constants as Triton's JIT does; no weight,
  softcap None, no z-loss/accuracy/predicted tokens, reduction "mean", gradients on.
- fla ``chunk_fwd_kernel_o`` (ops/common/chunk_o.py ``chunk_fwd_o``): H = HV = 16 heads,
  K = V = 128, BT 64 (chunk size), the autotune config BK = BV = 64 with num_warps 4,
  num_stages 3; USE_G (a gate tensor, fp32), no g_gamma, not varlen (the heuristics' values
  for those arguments); T is ``do_not_specialize``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from skel.kernels.machine import Launch, MachineFacts, MachineFactsUnavailable, machine_facts

#: (label, package, file inside it, kernel, launch)
KERNELS: list[tuple[str, str, str, str, Launch]] = [
    ("liger rms_norm fwd", "liger_kernel", "ops/rms_norm.py", "_rms_norm_forward_kernel", Launch(
        constexprs={"casting_mode": 0, "elementwise_affine": True, "BLOCK_SIZE": 4096},
        dtypes={"Y_ptr": "*bf16", "X_ptr": "*bf16", "W_ptr": "*bf16", "RSTD_ptr": "*fp32", "eps": "fp32",
                "offset": "fp32"},
        divisible=("Y_row_stride", "X_row_stride", "W_row_stride", "n_cols"), num_warps=8)),
    ("liger swiglu fwd", "liger_kernel", "ops/swiglu.py", "_swiglu_forward_kernel", Launch(
        constexprs={"n_cols": 14336, "BLOCK_SIZE": 16384},
        dtypes={"a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*bf16", "gate_multiplier": "fp32"},
        divisible=("stride",), num_warps=16)),
    ("liger cross_entropy", "liger_kernel", "ops/cross_entropy.py", "liger_cross_entropy_kernel", Launch(
        constexprs={"Y_stride": 1, "loss_stride": 1, "lse_square_scale": 0.0, "label_smoothing": 0.0,
                    "reduction": "mean", "softcap": None, "RETURN_Z_LOSS": False, "RETURN_TOKEN_ACCURACY": False,
                    "RETURN_PREDICTED_TOKENS": False, "BLOCK_SIZE": 32768, "HAS_WEIGHT": False,
                    "HAS_SOFTCAPPING": False, "HAS_GRADIENTS": True},
        dtypes={"X_ptr": "*bf16", "Y_ptr": "*i64", "weight_ptr": "*fp32", "loss_ptr": "*fp32",
                "z_loss_ptr": "*fp32", "token_accuracy_ptr": "*fp32", "predicted_tokens_ptr": "*i64",
                "sum_non_ignore_weight": "fp32", "weight_sum": "fp32"},
        divisible=("X_stride", "n_cols", "token_accuracy_stride", "predicted_tokens_stride"), num_warps=32)),
    ("fla chunk_fwd_kernel_o", "fla", "ops/common/chunk_o.py", "chunk_fwd_kernel_o", Launch(
        constexprs={"g_gamma": None, "cu_seqlens": None, "chunk_indices": None, "H": 16, "HV": 16, "K": 128,
                    "V": 128, "BT": 64, "BK": 64, "BV": 64, "USE_G": True, "USE_G_GAMMA": False,
                    "STATE_V_FIRST": False, "IS_VARLEN": False},
        dtypes={"q": "*bf16", "k": "*bf16", "v": "*bf16", "h": "*bf16", "g": "*fp32", "o": "*bf16",
                "scale": "fp32", "T": "i32"},
        num_warps=4, num_stages=3)),
]


def _source(package: str, rel: str) -> str:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{package} is not installed (pip install --no-deps fla-core==0.6.0 liger-kernel==0.8.5)")
    return (Path(list(spec.submodule_search_locations)[0]) / rel).read_text(encoding="utf-8")


def _spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):.2f} s ({min(xs):.2f}-{max(xs):.2f})"


def _row(label: str, f: MachineFacts, cold: list[float], imp: list[float], comp: list[float],
         cached: list[float]) -> str:
    mufu = ", ".join(f"{k} {n}" for k, n in f.mufu.items()) or "-"
    occ = f"{f.occupancy.blocks_per_sm} blk / {f.occupancy.warps_per_sm} warps ({f.occupancy.limited_by})"
    spill = f"{f.spill_stores}/{f.spill_loads}"
    return (f"| {label} | {f.registers} | {spill} | {f.shared_bytes} | {f.num_warps} | {occ} | "
            f"{f.loads.widest} B x{f.loads.total} | {f.mma} | {mufu} | {_spread(cold)} | {_spread(imp)} | "
            f"{_spread(comp)} | {statistics.median(cached) * 1e3:.1f} ms |")


def run(runs: int, lookups: int) -> str:
    head = ("| kernel | regs | spill st/ld B | smem B | warps | occupancy sm_90 | widest ld.global | MMA | MUFU | "
            "cold compile, child (min-max) | of which: running the file | of which: triton.compile + ptxas | "
            "cached lookup |\n|" + "---|" * 13)
    rows = [head]
    for label, package, rel, kernel, launch in KERNELS:
        src = _source(package, rel)
        cold: list[float] = []
        imp: list[float] = []
        comp: list[float] = []
        facts: MachineFacts | None = None
        try:
            for _ in range(runs):
                t0 = time.perf_counter()
                facts = machine_facts(src, kernel, launch, use_cache=False)
                cold.append(time.perf_counter() - t0)
                imp.append(facts.timings.get("import", 0.0))
                comp.append(facts.timings.get("compile", 0.0))
            warm = machine_facts(src, kernel, launch)  # fills the cache
            cached = []
            for _ in range(lookups):
                t0 = time.perf_counter()
                hit = machine_facts(src, kernel, launch)
                cached.append(time.perf_counter() - t0)
                assert hit.cached and hit.ptx_hash == warm.ptx_hash
        except MachineFactsUnavailable as e:
            rows.append(f"| {label} | unavailable: {e} |" + " |" * 11)
            continue
        assert facts is not None
        rows.append(_row(label, facts, cold, imp, comp, cached))
        print(rows[-1], file=sys.stderr, flush=True)
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="cold compiles per kernel (each in a fresh child)")
    ap.add_argument("--lookups", type=int, default=20, help="cached lookups per kernel")
    ap.add_argument("--out", help="also write the table to this markdown file")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="skel-machine-bench-") as d:
        os.environ["SKEL_CACHE_DIR"] = d  # a cache of this run's own: the lookups hit what it compiled
        # cold means a fresh child each time: the warm compile worker, which keeps torch and the
        # package loaded between compiles, is measured by benchmarks.performance.suggest_grounded
        os.environ["SKEL_COMPILE_WORKER"] = "0"
        table = run(args.runs, args.lookups)
    print(table)
    if args.out:
        Path(args.out).write_text(table + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
