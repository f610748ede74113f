"""Do contiguity hints change a gather of rows? (issue #8; needs a CUDA GPU and Triton)

`contiguity-hints` used to fit any load of rows gathered through loaded indices
(`table + rows[:, None] * stride + cols[None, :]`). Reviewers of sglang and vLLM kernels
judged the skeleton wrong 21 times in 24 (`python -m benchmarks.retrieval.precision report
--by skeleton`), most often saying that Triton specializes integer arguments divisible by 16, so
a loaded row index times such a stride is 16-divisible and the inner `tl.arange` run plain:
the compiler vectorizes without a hint. This script checks that claim and
its two exceptions on one gather, compiled and timed side by side:

- `plain` / `hinted`: a specialized stride, without and with hints;
- `unspecialized` / `unspecialized+hint`: the stride in `do_not_specialize`;
- `loaded-base` / `loaded-base+hint`: the table's base pointer read from memory.

For each it counts the global loads in the PTX by vector width, and times the kernel
(Triton's `do_bench`, median of 5 interleaved rounds, with their min-max spread).

    python -m benchmarks.performance.gather_hints [--rows 262144] [--width 1024] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys


def _kernels():
    import triton
    import triton.language as tl

    @triton.jit
    def gather(table, idx_ptr, out_ptr, n_rows, stride, HINT: tl.constexpr, BM: tl.constexpr,
               BD: tl.constexpr):
        offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
        offs_d = tl.program_id(1) * BD + tl.arange(0, BD)
        m = offs_m < n_rows
        rows = tl.load(idx_ptr + offs_m, mask=m, other=0)
        start = rows * stride
        if HINT:
            start = tl.multiple_of(start, 16)
            offs_d = tl.max_contiguous(tl.multiple_of(offs_d, BD), BD)
        x = tl.load(table + start[:, None] + offs_d[None, :], mask=m[:, None])
        tl.store(out_ptr + offs_m[:, None] * stride + offs_d[None, :], x, mask=m[:, None])

    @triton.jit(do_not_specialize=["stride"])
    def gather_unspecialized(table, idx_ptr, out_ptr, n_rows, stride, HINT: tl.constexpr, BM: tl.constexpr,
                             BD: tl.constexpr):
        offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
        offs_d = tl.program_id(1) * BD + tl.arange(0, BD)
        m = offs_m < n_rows
        rows = tl.load(idx_ptr + offs_m, mask=m, other=0)
        start = rows * stride
        if HINT:
            start = tl.multiple_of(start, 16)
            offs_d = tl.max_contiguous(tl.multiple_of(offs_d, BD), BD)
        x = tl.load(table + start[:, None] + offs_d[None, :], mask=m[:, None])
        tl.store(out_ptr + offs_m[:, None] * stride + offs_d[None, :], x, mask=m[:, None])

    @triton.jit
    def gather_loaded_base(ptrs, idx_ptr, out_ptr, n_rows, stride, HINT: tl.constexpr, BM: tl.constexpr,
                           BD: tl.constexpr):
        offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
        offs_d = tl.program_id(1) * BD + tl.arange(0, BD)
        m = offs_m < n_rows
        table = tl.load(ptrs).to(tl.pointer_type(out_ptr.dtype.element_ty))
        rows = tl.load(idx_ptr + offs_m, mask=m, other=0)
        start = rows * stride
        if HINT:
            table = tl.multiple_of(table, 16)
            start = tl.multiple_of(start, 16)
            offs_d = tl.max_contiguous(tl.multiple_of(offs_d, BD), BD)
        x = tl.load(table + start[:, None] + offs_d[None, :], mask=m[:, None])
        tl.store(out_ptr + offs_m[:, None] * stride + offs_d[None, :], x, mask=m[:, None])

    return gather, gather_unspecialized, gather_loaded_base


_LOAD = re.compile(r"\b(ld\.global(?:\.[a-z0-9_]+)*)\b")


def load_widths(ptx: str) -> dict[str, int]:
    """Global loads in the PTX by vector width: v4 / v2 / scalar."""
    out = {"v4": 0, "v2": 0, "scalar": 0}
    for m in _LOAD.finditer(ptx):
        op = m.group(1)
        out["v4" if ".v4" in op else "v2" if ".v2" in op else "scalar"] += 1
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=262144, help="rows gathered")
    ap.add_argument("--table-rows", type=int, default=1 << 20, help="rows in the table")
    ap.add_argument("--width", type=int, default=1024, help="row width (bf16 elements)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", help="write the rows here too")
    args = ap.parse_args(argv)

    import torch
    import triton
    from triton.testing import do_bench

    if not torch.cuda.is_available():
        print("needs a CUDA GPU", file=sys.stderr)
        return 2
    gather, gather_unspecialized, gather_loaded_base = _kernels()
    dev = "cuda"
    D = args.width
    table = torch.randn(args.table_rows, D, device=dev, dtype=torch.bfloat16)
    idx = torch.randint(0, args.table_rows, (args.rows,), device=dev, dtype=torch.int32)
    ptrs = torch.tensor([table.data_ptr()], device=dev, dtype=torch.int64)
    ref = table[idx.long()]
    BM, BD = 16, 256
    grid = (triton.cdiv(args.rows, BM), triton.cdiv(D, BD))
    variants = {
        "plain": (gather, table, False), "hinted": (gather, table, True),
        "unspecialized": (gather_unspecialized, table, False),
        "unspecialized+hint": (gather_unspecialized, table, True),
        "loaded-base": (gather_loaded_base, ptrs, False), "loaded-base+hint": (gather_loaded_base, ptrs, True),
    }
    outs, ptx, runs = {}, {}, {}
    for name, (fn, first, hint) in variants.items():
        out = torch.empty(args.rows, D, device=dev, dtype=torch.bfloat16)
        compiled = fn[grid](first, idx, out, args.rows, D, HINT=hint, BM=BM, BD=BD)
        torch.cuda.synchronize()
        if not torch.equal(out, ref):
            print(f"{name}: WRONG RESULT", file=sys.stderr)
            return 1
        ptx[name] = compiled.asm["ptx"]
        outs[name] = out
        runs[name] = []
    for _ in range(args.rounds):  # interleaved: drift hits every variant alike
        for name, (fn, first, hint) in variants.items():
            def launch(fn=fn, first=first, o=outs[name], hint=hint):
                fn[grid](first, idx, o, args.rows, D, HINT=hint, BM=BM, BD=BD)
            runs[name].append(do_bench(launch, return_mode="median"))
    base = statistics.median(runs["plain"])
    rows = []
    print(f"gather of {args.rows} rows x {D} bf16 from a {args.table_rows}-row table; BM={BM}, BD={BD}; "
          f"{torch.cuda.get_device_name()}, Triton {triton.__version__}")
    print(f"{'variant':<20} {'ld v4':>6} {'ld v2':>6} {'ld scalar':>9} {'median ms':>10} {'min-max ms':>16} "
          f"{'vs plain':>9}")
    for name in variants:
        w = load_widths(ptx[name])
        med = statistics.median(runs[name])
        rows.append({"variant": name, **{f"ld_{k}": v for k, v in w.items()}, "median_ms": med,
                     "min_ms": min(runs[name]), "max_ms": max(runs[name]), "vs_plain": base / med})
        print(f"{name:<20} {w['v4']:>6} {w['v2']:>6} {w['scalar']:>9} {med:>10.4f} "
              f"{min(runs[name]):>7.4f}-{max(runs[name]):<8.4f} {base / med:>8.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "device": torch.cuda.get_device_name(), "triton": triton.__version__,
                       "args": vars(args)}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
