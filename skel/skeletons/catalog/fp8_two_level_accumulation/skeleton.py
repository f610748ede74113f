"""Promote an FP8 GEMM's tensor-core accumulator into FP32 registers every K block ("two-level accumulation").

## What it does
Keeps two register accumulators in an FP8 GEMM's consumer: the MMA accumulator `accum`,
which the tensor cores add into for one K block only (e.g. 128 = four `m64nNk32` WGMMAs),
and a final accumulator `final_accum` that the CUDA cores own. After each K block the
consumer waits for the MMAs and *promotes*: `final_accum[i] += scale * accum[i]` (with
per-block scaling, `scale = scale_a[row] * scale_b[k_block]`), then starts the next block
with the MMA accumulator overwritten (`scale-d = 0` on the first WGMMA):

    float accum[N], final_accum[N] = {0};
    for (int kb = 0; kb < num_k_blocks; ++kb) {
        wait_full(kb);
        warpgroup_arrive();
        for (int k = 0; k < BLOCK_K / 32; ++k)
            wgmma_e4m3(accum, desc_a(kb, k), desc_b(kb, k), /*scale_d=*/k > 0);
        warpgroup_commit_batch(); warpgroup_wait<0>();
        const float s = scale_a[row][kb] * scale_b[kb];
        for (int i = 0; i < N; ++i) final_accum[i] += s * accum[i];   // promotion
    }

## Why it is faster
It is about accuracy at the same speed. Hopper's FP8 tensor cores add products into an
accumulator that keeps only about 14 bits of mantissa (DeepSeek-V3 technical report,
§3.3.2): over a long K (thousands), small products are rounded away and the relative
error grows to ~2%, which breaks training and degrades inference. Promoting every
128 elements bounds how much is summed at reduced precision, and the per-block scales
(fine-grained 1×128 / 128×128 quantization) are applied in the same FMA at no extra
cost. With two consumer warpgroups the promotion of one overlaps the other's WGMMAs,
so the tensor cores stay busy: DeepGEMM reaches >1.5 PFLOPS FP8 this way.

## Applies when
- a GEMM multiplies FP8 operands (`e4m3`/`e5m2` in the WGMMA or `mma` instruction,
  `__nv_fp8_e4m3` tiles) on tensor cores inside a K loop;
- one accumulator collects the whole K loop: no second register accumulator is updated
  from the MMA result per K block;
- the target is Hopper (sm_90/sm_90a), whose FP8 MMA accumulates with limited precision.

## Does not apply when
- the operands are BF16/FP16/TF32: their tensor-core accumulation is full FP32;
- K is one block (an attention logit `q·k` over a head dim of 128, a single unrolled
  K block): there is nothing to promote between;
- the target is Blackwell (sm_100) with `tcgen05` block-scaled MMA (`kind::mxf8f6f4`),
  which applies the scales and accumulates in FP32 in tensor memory itself;
- the kernel is not an MMA kernel at all (FP8 quantisation, casts, elementwise).

## References
- DeepGEMM (commit 54e2261) `deep_gemm/include/deep_gemm/impls/sm90_fp8_gemm_1d2d.cuh` (`sm90_fp8_gemm_1d2d_impl`: "Accumulation for WGMMA or CUDA promotion", `final_accum += scale * accum` after `warpgroup_wait<0>()`)
- DeepGEMM (commit 54e2261) `deep_gemm/include/deep_gemm/impls/sm90_fp8_gemm_1d1d.cuh` (`sm90_fp8_gemm_1d1d_impl`: the same promotion with 1D scales on both operands)
- DeepGEMM initial commit a6d97a1, `deep_gemm/include/deep_gemm/fp8_gemm.cuh` (`fp8_gemm_kernel`: `final_accum[i] += scale * accum[i]` after `warpgroup_wait<0>()`)
- DeepSeek-V3 Technical Report (arXiv:2412.19437), §3.3.2 "Increasing Accumulation Precision"
- CUTLASS `include/cutlass/gemm/collective/fp8_accumulation.hpp` (`GmmaFP8Accumulation::promote_if_needed` / `scale_if_needed`: the same promotion every `mma_promotion_interval` MMAs in the sm90 FP8 collectives)
- PTX ISA, "Warpgroup Level Matrix Multiply-Accumulate Instructions: wgmma.mma_async" (`.e4m3`/`.e5m2` operands, `scale-d`)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.patterns import any_of, calls_where, names_where
from skel.skeletons.predicates.cuda_gemm import call_sites, fp8_operands, k_loops, mma_calls

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts

#: register-accumulator MMAs: Blackwell's UMMA accumulates block-scaled FP8 in tensor memory
#: at full precision, so it is not a candidate (nor does it promote)
_KINDS = ("wgmma", "mma.sync", "cute")
_ASM_OPERAND = re.compile(r"\"[+=]f\"\s*\(\s*\*?\s*([A-Za-z_]\w*)")
_ZERO = re.compile(r"^\s*(\{\s*(0(\.0*)?f?\s*)?\}|0(\.0*)?f?|0\.f)\s*$")
_ARRAY_HEAD = re.compile(r"^\s*\(?\s*\*?\s*([A-Za-z_]\w*)\s*(\[|\+|$)")


def _accumulators(k) -> set[str]:
    """Names an MMA writes: the arguments of MMA calls (`WGMMA::wgmma(desc_a, desc_b, accum, k)`,
    a `wgmma_m64n128k32_e4m3(acc, ...)` helper) and the `"+f"(d[0])` operands of inline asm."""
    names: set[str] = set()
    for c in mma_calls(k, _KINDS):
        names.update(h for a in c.args if (h := _head(a.lstrip("&"))))
    names.update(_ASM_OPERAND.findall(k.source or ""))
    params = {p.name for p in k.params}
    return {n for n in names - params if _maybe_float(k, n)}


def _maybe_float(k, name: str) -> bool:
    """A name whose declared type is known is kept only when it is a float (the accumulator,
    not a descriptor or a loop index); an undeclared one (a helper's alias) is kept."""
    dtype = (k.var_dtypes or {}).get(name)
    declared = (getattr(k, "var_types", None) or {}).get(name)
    if dtype is None and declared is None:
        return True
    return dtype == "fp32" or bool(declared and re.search(r"\bfloat\b", declared))


def _head(target: str) -> str:
    m = _ARRAY_HEAD.match(target)
    return m.group(1) if m else ""


def _mma_k_loops(k, restarted_ok: bool = True) -> list:
    """Loops walking K around an MMA whose accumulator is not declared or zeroed inside them
    (a loop over output tiles does that each time: it is not the K loop). Unless
    ``restarted_ok``, also drop the loops in which the MMA itself restarts the accumulator
    every iteration (see ``_restarts``): there the tensor cores never sum more than the
    inner steps, whatever the loop's length."""
    accs = _accumulators(k)
    out = []
    for c in mma_calls(k, _KINDS):
        last = max(call_sites(k, c.line))
        for lp in k_loops(k, c.line):
            reset = any(lp.line <= a.line <= last and a.op == "=" and _ZERO.match(a.value)
                        and {_head(t) for t in a.targets} & accs for a in k.assigns)
            if not restarted_ok and not reset:
                reset = _restarts(k, c, lp)
            if not reset and lp not in out:
                out.append(lp)
    return out


_FLAG = re.compile(r"^\s*(\w+)\s*(?:(?:>|!=)\s*0u?)?\s*$")


def _restarts(k, c, lp) -> bool:
    """The MMA's last argument is its scale-d flag (`WGMMA::wgmma(desc_a, desc_b, accum, k)`,
    `wgmma(acc, da, db, k > 0)`) and it is `false`/`0`, or the index of a loop nested inside
    ``lp``: the first MMA of every ``lp`` iteration overwrites the accumulator."""
    if len(c.args) < 4:
        return False
    flag = c.args[-1].strip()
    if flag in ("false", "0"):
        return True
    m = _FLAG.match(flag)
    if not m:
        return False
    sites = call_sites(k, c.line)
    for inner in k.loops:
        if inner is lp or not (lp.line < inner.line and inner.end_line <= lp.end_line):
            continue
        if any(inner.line <= s <= inner.end_line for s in sites) and m.group(1) in _loop_vars(inner):
            return True
    return False


def _loop_vars(lp) -> set[str]:
    found = set(lp.targets or [])
    init = lp.args[0] if lp.args else ""
    found.update(re.findall(r"(\w+)\s*=(?!=)", init))
    return found


def _promotions(k: KernelFacts) -> list[int] | None:
    """`final[i] += s * accum[i]` inside the K loop: a register array other than the MMA's own
    accumulator is updated from it each K block."""
    accs = _accumulators(k)
    if not accs:
        return None
    loops = _mma_k_loops(k)
    lines = []
    for a in k.assigns:
        if not any(lp.line <= s <= lp.end_line for lp in loops for s in call_sites(k, a.line)):
            continue
        heads = {_head(t) for t in a.targets} - {""}
        if not heads or heads & accs or heads & {p.name for p in k.params}:
            continue
        reads = set(a.names) & accs
        if not reads:
            continue
        accumulates = a.op == "+=" or (a.op == "=" and (heads & set(a.names)) and
                                       ("+" in a.value or any("fma" in c for c in a.calls)))
        if accumulates:
            lines.append(a.line)
    return lines or None


_CUTLASS_PROMOTION = (".promote_if_needed", ".scale_if_needed", ".promote_residue_if_needed",
                      ".scale_residue_if_needed")


def _fp8_mma(k: KernelFacts) -> list[int] | None:
    """FP8 operands (``fp8_operands``: calls and names) in a kernel that runs a register-
    accumulator MMA."""
    if not mma_calls(k, _KINDS):
        return None
    return fp8_operands(k) or None


def _mma_in_k_loop(k: KernelFacts) -> list[int] | None:
    """The MMA calls inside a K loop that does not restart their accumulator."""
    loops = _mma_k_loops(k, restarted_ok=False)
    return [c.line for c in mma_calls(k, _KINDS)
            if any(lp.line <= s <= lp.end_line for lp in loops for s in call_sites(k, c.line))] or None


PROMOTION = custom("fp32-promotion",
                   "the MMA accumulator added into a second FP32 register accumulator each K block "
                   "(`final_accum[i] += scale * accum[i]`)", _promotions)
#: CUTLASS's FP8 promotion object: `GmmaFP8Accumulation` and its `promote_if_needed()` /
#: `scale_if_needed(...)` calls (calls and names: two kinds of element)
CUTLASS_PROMOTION = any_of(
    calls_where(*_CUTLASS_PROMOTION, name="cutlass-promotion-calls",
                describe="`promote_if_needed()` / `scale_if_needed(...)` calls"),
    names_where(r"(?s)(?:.*::)?GmmaFP8Accumulation", name="gmma-fp8-accumulation",
                describe="a `GmmaFP8Accumulation` object"),
    name="cutlass-fp8-promotion", describe="CUTLASS's FP8 promotion (`GmmaFP8Accumulation`, `promote_if_needed()`)")
FP8_MMA = custom("fp8-mma", "a tensor-core MMA on FP8 operands (`e4m3`/`e5m2`, `__nv_fp8_e4m3`)", _fp8_mma)
MMA_IN_K_LOOP = custom("mma-accumulates-over-k-loop",
                       "a tensor-core MMA accumulating into one accumulator across a K loop", _mma_in_k_loop)

SKELETON = Skeleton(
    id="fp8-two-level-accumulation",
    title="FP8 GEMM two-level accumulation (promotion to FP32 every K block)",
    summary="Add the FP8 MMA accumulator into an FP32 register accumulator every K block (DeepGEMM promotion).",
    category=Category.ARITHMETIC,
    doc=__doc__,
    ruled_out_by=(r"\bpromot\w*", r"two[\s_-]*level[\s_-]*accum\w*", r"final[\s_-]*accum\w*"),
    present=(FP8_MMA & PROMOTION) | CUTLASS_PROMOTION,
    preconditions=[FP8_MMA, MMA_IN_K_LOOP],
    subject=FP8_MMA,
    pays_in="accuracy",
    env=Env(backends=("cuda",), min_cc=90),
    helps=("compute",),
    languages=("cuda",),
)
