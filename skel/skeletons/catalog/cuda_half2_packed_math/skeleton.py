"""Do fp16/bf16 arithmetic two lanes at a time: `half2`/`__nv_bfloat162` intrinsics on paired elements.

## What it does
A kernel that already computes in 16-bit — `__hmul`, `__hadd`, `__hfma`, `hexp`, `hrcp` on
one `half` (or `__nv_bfloat16`) per call — is rewritten so each thread owns two adjacent
elements and every operation is the packed form on a `half2` register:

    const half w = W[k * N + n];                     const half2 w = W2[k * N2 + n2];   // 4-byte load
    for (int b = 0; b < B; ++b)                   →  for (int b = 0; b < B; ++b)
      acc[b] = __hfma(xs[b][k], w, acc[b]);            acc[b] = __hfma2(__half2half2(xs[b][k]), w, acc[b]);

The pointer is reinterpreted as `const half2*` (the pair is one 4-byte load and store), a
scalar shared by both lanes is broadcast once with `__half2half2` (`__bfloat162bfloat162`),
two separately computed halves are packed with `__halves2half2`, and `__hmul2`, `__hadd2`,
`__hfma2`, `h2exp`, `h2rcp` do the arithmetic. An odd element count keeps a scalar tail.

## Why it is faster
Since sm_53 the FP16 pipe executes `HFMA2`/`HMUL2`/`HADD2`: one instruction, two lanes. A
scalar `__hfma` issues the same instruction with one lane wasted, so a kernel whose time
is the arithmetic (instruction-bound) does half the math instructions, half the register
moves and — with the pair loaded as one 32-bit word — half the loads, address computations
and loop trips. Where each loaded element feeds many operations (a small-batch GEMV whose
activations sit in shared memory: every weight is used once per batch row; a long
per-element activation chain), the math is what the SM waits on, and packing it is close
to a 2× cut in issued instructions. bf16 has the same packed instructions from sm_80.

When it does not pay: a kernel that does one or two operations per element it loads is
memory-bound at HBM bandwidth on large tensors. Packing the math then saves nothing; the
only gain is the wider load, and 16-byte loads (`uint4`: the `vectorized-128bit-access`
skeleton) give more of it than a 4-byte `half2`. exllamav2's first "half2 optimization" of
its RMSNorm (31ef9cfa) is of that kind: it pairs the loads and still does the math in float.

## Applies when
- a `__global__` kernel calls scalar 16-bit arithmetic intrinsics (`__hmul`, `__hadd`,
  `__hsub`, `__hfma`, `__hneg`, `__hdiv`, `__hmax`/`__hmin`, `hexp`, `hrcp`, `hrsqrt`,
  `hsqrt`, `hlog`, `htanh` ...) on elements adjacent threads (or a thread's unit-step loop)
  read from a global pointer — directly (`__hmul(x[i], s)`) or through a register loaded so
  (`w = W[k * N + n]; __hfma(xs[b][k], w, acc[b])`) — so two of them can be one pair;
- it uses no packed type or intrinsic yet (`half2`, `__nv_bfloat162`, `__hmul2`,
  `__half2half2`, `__halves2half2` ...): a kernel with a half2 path has chosen it;
- **it pays** (a suggestion) when the kernel is instruction-bound: the 16-bit math sits in a
  loop that reads no global memory and takes a register loaded before that loop (each loaded
  element reused every trip: a weight against every batch row), or the kernel issues at least
  4 such operations per global element access. Otherwise the payoff
  is conditional: tensors past 64 MiB make it memory-bound at HBM (does not pay: the wider
  load is the only gain), smaller ones may be L2-resident — measure.

## Does not apply when
- the arithmetic is in float (`__half2float(x[i]) * w`, converted back on the store): there
  is no 16-bit instruction to pack — the pair helps the load only (see
  `vectorized-128bit-access`), and computing in half would lose precision the authors kept;
- the 16-bit math is on a per-row or per-block scalar (`__hdiv(sum, n)` after a reduction,
  an accumulator combined across lanes): one instruction per row bounds nothing;
- the elements are gathered (`x[idx[i]]`) or strided between threads (`x[i * ld]`): the
  two lanes of a pair are not adjacent in memory;
- the kernel already has a `half2` path (exllamav2's `use_half2` template flag with a
  scalar fallback for odd widths);
- a long reduction accumulated in half: packing keeps its rounding error; that is
  `cuda-fp32-partial-accumulation`'s business, not a speed question.

## References
- exllamav2 `exllamav2/exllamav2_ext/cuda/rms_norm.cu` (`rms_norm_kernel`: rows read as
  `const half2*`, each thread two columns, stored with `__halves2half2`; the math stays in
  float) — at `31ef9cfa7b`, 2024-03-10, "RMSnorm + Layernorm: half2 optimization", before
  2025-07-01; the same commit does `layer_norm.cu` (`layer_norm_kernel`)
- exllamav2 `exllamav2/exllamav2_ext/cuda/q_mlp.cu` (`silu_mul_kernel`: a `use_half2`
  template flag, `__hmul2(silu(x2), y2)` on the packed path and `__hmul` on the scalar
  fallback; the `gelu(half2)` added there packs two scalar results with `__halves2half2`)
  — at `cc1094a41b`, 2024-02-22, "Support Gemma", before 2025-07-01
- exllamav2 `exllamav2/exllamav2_ext/cuda/q_gemm_kernel.cuh` (`gemm_half_q_half_kernel`:
  the per-row router weight broadcast with `__half2half2(weights[m].as_half)` and applied to
  the packed results with `__hmul2`) — at `d2753a29b8`, 2023-12-16, "Mixtral EXL2 support,
  initial", before 2025-07-01
- llm-awq `awq/kernels/csrc/quantization_new/gemv/gemv_cuda.cu` (`gemv_kernel`: dequantised
  weights as `half2`, each input broadcast with `__half2half2(local_inputs[y])` into
  `__hfma2`) — at `5f06dbbed1`, 2024-02-23, "[MAJOR] add new backend kernels & support
  multi-modal models"; bf16 added with `__bfloat162bfloat162` at `e65873f420`, 2025-02-11,
  "Bf16 support for tinychat 2.0 on GEMV and GEMM (#255)", before 2025-07-01
- the candidate clusters 23, 30 and 57 of `skel skeletons candidates` (exllamav2,
  flashinfer, flash-attention, bitsandbytes: "+ call __half2half2", "+ call __hmul2",
  "+ call __halves2half2")
- CUDA Math API, "Half2 Arithmetic Functions" (`__hfma2`, `__hmul2`, `__half2half2`,
  `__halves2half2`) and "Bfloat162 Arithmetic Functions"; CUDA C++ Programming Guide,
  "Arithmetic Instructions" (16-bit `half2` throughput: two results per lane per clock)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN, Category, Env, Payoff, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.patterns import params_where
from skel.skeletons.predicates.cuda import pointer_names, subscripts, unit_stride_accesses
from skel.skeletons.predicates.cuda_tiles import is_kernel

if TYPE_CHECKING:
    from skel.kernels.model import Call, KernelFacts, Param
    from skel.skeletons.base import Workload

#: scalar 16-bit arithmetic intrinsics (cuda_fp16.h / cuda_bf16.h): one lane per instruction
_SCALAR = re.compile(r"^(?:__h(?:add|sub|mul|fma|div|neg|max|min|abs)(?:_rn|_sat|_relu|_nan)*|"
                     r"h(?:exp|exp2|exp10|log|log2|log10|sqrt|rsqrt|rcp|sin|cos|tanh|tanh_approx))$")
#: packed intrinsics and conversions: the kernel already works on pairs
_PACKED_CALL = re.compile(r"^(?:__h(?:add|sub|mul|fma|div|neg|max|min|abs)2\w*|h2\w+|__half2half2|__halves2half2|"
                          r"__bfloat162bfloat162|__halves2bfloat162|__floats2half2_rn|__float22half2_rn|"
                          r"__floats2bfloat162_rn|__float22bfloat162_rn|__half22float2|__bfloat1622float2|"
                          r"__lows2half2|__highs2half2|__low2half|__high2half|__low2bfloat16|__high2bfloat16)$")
_PACKED_TYPE = re.compile(r"\b(?:__)?half2\b|\b(?:__)?nv_bfloat162\b|\bbfloat162\b")
_STEP_ONE = re.compile(r"^\s*(?:\+\+\s*(\w+)|(\w+)\s*\+\+|(\w+)\s*\+=\s*1)\s*$")
_IDENT = re.compile(r"[A-Za-z_]\w*")
#: tensors past this many bytes do not stay in L2 (50 MiB on H100/H200): memory-bound at HBM
_HBM_BYTES = 64 << 20
#: 16-bit operations per global access at which the math, not the memory, bounds the kernel
_OPS_PER_ACCESS = 4


def _packed(k: KernelFacts) -> list[int]:
    lines = [c.line for c in k.calls if _PACKED_CALL.match(c.name)]
    lines += [k.names.get(v, 0) for v, t in (k.var_types or {}).items() if _PACKED_TYPE.search(t or "")]
    return [ln for ln in lines if ln]


def _packed_param(p: Param, k: KernelFacts) -> bool:
    return bool(_PACKED_TYPE.search(p.annotation or ""))


def _step_one_vars(k: KernelFacts) -> set[str]:
    """Variables of `for` loops stepping by one (`++k`): a thread walking its own contiguous run."""
    out = set()
    for lp in k.loops:
        if lp.kind == "for" and len(lp.args) >= 3:
            m = _STEP_ONE.match(lp.args[2])
            if m:
                out.add(next(g for g in m.groups() if g))
    return out


def _pair_accesses(k: KernelFacts) -> list[str]:
    """Global element accesses two adjacent elements of which a thread could take as one pair:
    unit stride between threads, or along a thread's step-one loop; never gathered."""
    pointers, steps = pointer_names(k), _step_one_vars(k)
    texts = [f"{s.base}[{s.index}]" for s in unit_stride_accesses(k)]
    for s in subscripts(k):
        if s.base in pointers and "[" not in s.index and re.search(r"(?:^|[+\s(])(" + "|".join(
                map(re.escape, steps)) + r")\s*(?:$|[+\-)])", s.index) if steps else False:
            texts.append(f"{s.base}[{s.index}]")
    return [re.sub(r"\s+", "", t) for t in texts]


def _reads(text: str, accesses: list[str]) -> bool:
    """``text`` (blanks removed) reads one of ``accesses`` as a value, not as another subscript's
    index (`t[ids[i]]` gathers: `ids[i]` is adjacent, the element of `t` is not)."""
    for t in accesses:
        for m in re.finditer(re.escape(t), text):
            before = text[:m.start()]
            if not re.search(r"[\w.]$", before) and before.count("[") <= before.count("]"):
                return True
    return False


def _pair_names(k: KernelFacts, accesses: list[str]) -> set[str]:
    """Registers holding such an element, or a value computed from one (not accumulators:
    `acc = __hfma(a, b, acc)` folds many elements into one)."""
    names: set[str] = set()
    for _ in range(3):
        for a in k.assigns:
            if not a.targets:
                continue
            target = _IDENT.findall(a.targets[0])[:1]
            if not target or target[0] in a.names or a.op != "=":
                continue
            value = re.sub(r"\s+", "", a.value)
            if _reads(value, accesses) or set(a.names) & names:
                names.add(target[0])
    return names


def _register_lines(k: KernelFacts, names: set[str]) -> dict[str, list[int]]:
    """Lines assigning each pairable register (a plain name: `wv = w[k * N + n]`), not arrays
    written element by element (`stage[i] = ...`), whose element changes every trip."""
    out: dict[str, list[int]] = {}
    for a in k.assigns:
        t = a.targets[0].strip() if a.targets else ""
        if t in names:
            out.setdefault(t, []).append(a.line)
    subscripted = {_IDENT.findall(a.targets[0])[0] for a in k.assigns if a.targets and "[" in a.targets[0]
                   and _IDENT.findall(a.targets[0])}
    return {n: v for n, v in out.items() if n not in subscripted}


def scalar_half_calls(k: KernelFacts) -> list[Call]:
    """Scalar 16-bit arithmetic calls on pairable elements: an argument is an adjacent-element
    global access or a register derived from one."""
    if not is_kernel(k):
        return []
    accesses = _pair_accesses(k)
    if not accesses:
        return []
    names = _pair_names(k, accesses)
    out = []
    for c in k.calls:
        if not _SCALAR.match(c.name):
            continue
        args = [re.sub(r"\s+", "", a) for a in c.args]
        if any(_reads(a, accesses) for a in args) or any(set(_IDENT.findall(a)) & names for a in args):
            out.append(c)
    return out


def _global_access_lines(k: KernelFacts) -> list[int]:
    pointers = pointer_names(k)
    return [s.line for s in subscripts(k) if s.base in pointers]


def _global_accesses(k: KernelFacts) -> int:
    """Distinct global element accesses (`x[i]` read and `y[i]` written count two)."""
    pointers = pointer_names(k)
    return len({(s.base, re.sub(r"\s+", "", s.index)) for s in subscripts(k) if s.base in pointers})


def half2_pays(k: KernelFacts, wl: Workload) -> Payoff:
    """Instruction-bound (math on reused operands, or ≥4 16-bit ops per global access): pays.
    Otherwise memory-bound past L2 (does not pay: only the wider load gains), else unknown."""
    calls = scalar_half_calls(k)
    if not calls:
        return Payoff(UNKNOWN, "no scalar 16-bit arithmetic on pairable elements")
    access = _global_access_lines(k)
    registers = _register_lines(k, _pair_names(k, _pair_accesses(k)))
    for c in calls:
        lp = next((lp for lp in k.loops if lp.line == c.loop_line), None)
        if lp is None or any(lp.line <= ln <= lp.end_line for ln in access):
            continue
        per_trip = set(lp.targets)  # an operand indexed by the loop's own variable changes every trip
        reused = [n for a in c.args if not (set(_IDENT.findall("".join(re.findall(r"\[[^\]]*\]", a)))) & per_trip)
                  for n in _IDENT.findall(a)
                  if n in registers and not any(lp.line <= ln <= lp.end_line for ln in registers[n])]
        if reused:
            return Payoff(PAYS, f"`{c.name}` (line {c.line}) runs in the loop at line {lp.line}, which reads no "
                          f"global memory, on `{reused[0]}` loaded before it: each element loaded is reused every "
                          "trip, so the 16-bit math is what the kernel issues most — `half2` intrinsics do it in "
                          "half the instructions")
    accesses = _global_accesses(k)
    ratio = len(calls) / max(1, accesses)
    if ratio >= _OPS_PER_ACCESS:
        return Payoff(PAYS, f"{len(calls)} scalar 16-bit operations for {accesses} global element accesses "
                      f"(≥{_OPS_PER_ACCESS} per access): instruction-bound, packed math halves it")
    n, name = wl.largest_elements(k)
    few = f"{len(calls)} scalar 16-bit operation{'s' if len(calls) != 1 else ''} per {accesses} " \
          "global element accesses"
    if n is not None and 2 * n >= _HBM_BYTES:
        return Payoff(DOES_NOT_PAY, f"{few}, and {name} holds {n:,} elements ({2 * n / 2**20:,.0f} MiB, past L2): "
                      "memory-bound at HBM bandwidth — packing the math saves nothing; only the wider load gains, "
                      "and 16-byte loads (vectorized-128bit-access) gain more")
    return Payoff(UNKNOWN, f"{few}: memory-bound on tensors past L2 (the wider load is then the only gain); on "
                  "tensors that stay in L2 the instructions may bound it — measure",
                  "--shape elements=N (the largest tensor)")


def _scalar_half_lines(k: KernelFacts) -> list[int]:
    """Lines of scalar 16-bit arithmetic on elements that could be paired."""
    return [c.line for c in scalar_half_calls(k)]


PRESENT = custom("packed-16bit-math", "`half2`/`__nv_bfloat162` values or packed intrinsics (`__hmul2`, `__hfma2`, "
                 "`__half2half2`, `__halves2half2`)", _packed) | \
    params_where(constexpr=False, where=_packed_param, name="packed-16bit-params",
                 describe="`half2`/`__nv_bfloat162` pointer parameters (`const half2* x`)")
#: the subject: scalar 16-bit arithmetic on elements that could be paired
SUBJECT = custom("scalar-16bit-math", "scalar fp16/bf16 arithmetic intrinsics (`__hmul`, `__hfma`, `hexp`) on "
                 "elements adjacent threads or a thread's unit-step loop read from global memory",
                 _scalar_half_lines)

SKELETON = Skeleton(
    id="cuda-half2-packed-math",
    title="half2 / bfloat162 packed arithmetic (two 16-bit lanes per instruction)",
    summary="Compute fp16/bf16 in pairs with __hfma2/__hmul2/__half2half2 on half2 loads instead of one half per op.",
    category=Category.ARITHMETIC,
    doc=__doc__,
    ruled_out_by=(r"\bhalf2\b", r"\bbfloat162\b", r"\bpacked (16-?bit|fp16|half) (math|arithmetic)"),
    present=PRESENT,
    preconditions=[SUBJECT],
    subject=SUBJECT,
    env=Env(backends=("cuda",)),
    helps=("compute",),
    languages=("cuda",),
    payoff=half2_pays,
)
