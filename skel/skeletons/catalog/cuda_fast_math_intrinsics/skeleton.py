"""Hardware (SFU) intrinsics for float transcendentals in a hot CUDA loop: `__expf`, `__powf`, `__sincosf`, `__logf`.

## What it does
A device loop that calls the precise single-precision libm functions — `expf`/`exp`,
`logf`/`log`, `powf`/`pow`, `sinf`/`cosf`/`sincosf`, `tanhf` on floats — is rewritten to
call the intrinsics that map onto the special-function unit (SFU):

    for (int n = 0; n < kStates; ++n) {                 for (int n = 0; n < kStates; ++n) {
      const float dA = expf(dt * A[n]);           →       const float dA = __expf(dt * A[n]);
      h[n] = dA * h[n] + dt * Bt[n] * u;                  h[n] = dA * h[n] + dt * Bt[n] * u;

`expf(x)` → `__expf(x)`, `logf` → `__logf`, `powf(b, e)` → `__powf(b, e)`, `sinf`/`cosf` of
one angle → one `__sincosf(x, &s, &c)`, `a / b` in the same loop → `__fdividef(a, b)` where
|b| stays under 2^126; or the whole translation unit compiled with `-use_fast_math`
(xformers' setup.py, 0d5a3856), which does all of this and flushes denormals.

## Why it is faster
The precise functions are software: `expf` is a range reduction, a polynomial or `ex2.approx`
and fix-ups for overflow, underflow and denormals (about ten instructions); `powf` is a
`log2` in extended precision, a product and an `exp2` (several tens); `sinf`/`cosf` carry a
Cody–Waite reduction and, for |x| > 105,615, a Payne–Hanek slow path that keeps a table walk
and a local-memory stack frame in the kernel even when it never runs. The intrinsics are one
multiply and one `MUFU.EX2`/`MUFU.LG2`/`MUFU.SIN`+`MUFU.COS` each, issued on the SFU beside
the FMA pipe. In a loop whose operands come from registers or shared memory — a selective
scan's `exp(dt * A)` per state, an online softmax's rescaling per key, a rotary embedding
computing its angles per element — these calls are what the kernel issues most, and the
intrinsics cut that to a fraction: flashinfer's "fastmath" commit switched its decode
kernel's `exp`, `powf` and `sinf`/`cosf` in one go.

When it does not pay: one `expf` per element of a large fp32 tensor read from HBM — a
sigmoid, a softmax over a row — sits well inside the memory time (about 70 issue slots
per 8 bytes moved on an H100), so the kernel runs no faster; nvcc with `-use_fast_math`
already emits the intrinsics for every call; and `exp2f`/`log2f`, `rsqrtf`, `__frcp_rn`
are already single SFU operations.

## Applies when
- a `__global__` kernel (or a device helper it calls) calls a precise float
  transcendental — `expf`, `exp`, `logf`, `log`, `powf`, `pow`, `sinf`, `cosf`,
  `sincosf`, `tanf`, `tanhf`, `exp10f`, `log10f` — inside a loop;
- it computes in float (no `double` values) and is not a loss, log-softmax, log-sum-exp
  or sampling kernel (by its name);
- **it pays** (a suggestion) when such a call sits in a loop that reads no global memory
  (its operands in registers or shared memory: the transcendental is what the loop does),
  or the kernel makes at least two such calls per global element access (`powf`/`sinf`/`cosf`
  counted three times: a rotary embedding applied to each key in a decode loop). A call per element of
  a large tensor is memory-bound past L2 (does not pay; `powf`/`sinf`/`cosf`, tens of
  instructions each, stay conditional — measure); without sizes, conditional
  (`--shape elements=N`).

## Does not apply when
- the result must be accurate past a few ulp, or is summed over a long reduction: a loss,
  `logsumexp`, log-probabilities, sampling thresholds (`__logf` of a probability near 1 has
  a large relative error; `__expf` errs by 2 + floor(|1.173·x|) ulp, growing with |x|);
- the argument of `__sinf`/`__cosf`/`__sincosf` leaves [-π, π] by far: the SFU reduces the
  angle with a single fp32 multiply by 1/2π, so its absolute error grows with |x| — for a
  rotary embedding angle `pos * inv_freq` at position 100,000 that product alone is off by
  about 2^-24 · 100,000 / 2π turns (~6e-3 rad), where `sincosf` reduces exactly. flashinfer kept `__sincosf` but, in "iterative-sincos"
  (b98563cbba), replaced the per-key call by an angle-addition recurrence from one
  `__sincosf` per token — removing the intrinsic from the loop altogether;
- `__powf(b, e)` with large |e·log2 b|: the error of the `lg2` is multiplied by the
  exponent (a RoPE `inv_freq = theta^(-2i/d)` for theta = 500,000 computed with `__powf`
  drifts at long positions: compute it precisely once, outside the loop);
- the kernel already uses the intrinsics (`__expf`, `__sincosf`, `tanh.approx` inline asm),
  or computes in `double`;
- the call is outside any loop (a per-row `logf(sum)` after a reduction): one call per row
  bounds nothing.

## References
- flashinfer `include/flashinfer.cuh` (`SingleDecodeWithKVCacheKernel` and its helpers
  `update_partial_mdo`, `apply_rotary`: `exp` → `__expf` in the online softmax, `cosf`/`sinf`
  → `__sincosf`, `powf` → `__powf` for the rotary frequencies) — at `6ab4380ec8`, 2023-08-25,
  "fastmath", before 2025-07-01
- flashinfer `include/flashinfer/decode.cuh` (`BatchDecodeWithPaddedKVCacheKernel`:
  `powf(rope_rcp_theta, ...)` → `__powf`) — at `5bcba4928c`, 2023-12-19, "batch qkv apply
  rotary in place", before 2025-07-01
- flashinfer `include/flashinfer/decode.cuh` (`BatchDecodeWithPagedKVCacheKernel`: the per-key
  `__sincosf` replaced by a sin/cos recurrence) — at `b98563cbba`, 2023-10-15,
  "iterative-sincos", before 2025-07-01
- exllamav2 `exllamav2/exllamav2_ext/cuda/q_mlp_activation.cuh` (`gelu`: `pow(xf, 3)` → `xf * xf
  * xf` and `tanh` → `tanh_opt`, `tanh.approx.f32` inline asm, or `__expf` on old targets, in
  `compat.cuh`) — at `f33262f490`, 2024-03-10, "GeLU: eliminate powf, approx tanh", before
  2025-07-01
- xformers `setup.py` (`nvcc_flags = ["--use_fast_math", "-DNDEBUG"]` for its attention
  kernels) — at `0d5a3856c6`, 2022-09-09, "Compile with --use_fast_math (#385)", before 2025-07-01
- the candidate clusters 60 ("+ call __powf") and 65 ("- call __sincosf") of `skel skeletons
  candidates` (flashinfer)
- CUDA C++ Programming Guide, "Mathematical Functions": "Intrinsic Functions" (the
  `__expf`/`__sinf`/`__powf` error bounds, `-use_fast_math`) and the single-precision
  functions' ulp table
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN, Category, Env, Payoff, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.patterns import params_where
from skel.skeletons.predicates.cuda import pointer_names, subscripts
from skel.skeletons.predicates.cuda_tiles import is_kernel

if TYPE_CHECKING:
    from skel.kernels.model import Call, KernelFacts, Param
    from skel.skeletons.base import Workload

#: precise float transcendentals (and their C++ float overloads); `exp2f`/`log2f` are single SFU ops already
_PRECISE = re.compile(r"^(?:std::)?(?:expf?|logf?|powf?|sinf?|cosf?|sincosf?|tanf?|tanhf?|exp10f?|log10f?|expm1f?|"
                      r"log1pf?)$")
#: the heavy ones: tens of instructions, a slow path
_HEAVY = re.compile(r"^(?:std::)?(?:powf?|sinf?|cosf?|sincosf?|tanf?)$")
#: the intrinsics, and approximate PTX in inline asm
_FAST = re.compile(r"^(?:__(?:expf|exp10f|logf|log2f|log10f|powf|sinf|cosf|sincosf|tanf|fdividef)|"
                   r"ptx:(?:ex2|lg2|sin|cos|tanh|rcp|rsqrt)\.approx\b.*)$")
#: kernels whose results feed a loss, a probability or a sample: accuracy first
_ACCURACY_NAME = re.compile(r"(?i)(loss|entropy|logsumexp|(?:^|_)lse(?:_|$)|log_?softmax|log_?probs?|logits_?to_?prob|"
                            r"sampl)")
_DOUBLE = re.compile(r"\bdouble\b")
#: tensors past this many bytes do not stay in L2 (50 MiB on H100/H200)
_HBM_BYTES = 64 << 20
#: precise calls per global access line at which the math bounds the loop
_CALLS_PER_ACCESS = 2
#: `powf`/`sinf`/`cosf` cost several `expf`s (tens of instructions against about ten)
_HEAVY_WEIGHT = 3


def _hot(k: KernelFacts) -> list[tuple[Call, int]]:
    """(call, line of the loop it runs in) for each precise transcendental of a `__global__` kernel
    that runs in a loop: its own loops, a folded helper's, or the kernel loop calling that helper."""
    if not is_kernel(k):
        return []
    called_in: dict[str, int] = {}
    for c in k.calls:
        if c.name in k.folded and c.loop_depth >= 1 and not k.helper_at(c.line):
            called_in.setdefault(c.name, c.loop_line)
    out = []
    for c in k.calls:
        if not _PRECISE.match(c.name):
            continue
        if c.loop_depth >= 1:
            out.append((c, c.loop_line))
        elif k.helper_at(c.line) in called_in:
            out.append((c, called_in[k.helper_at(c.line)]))
    return out


def precise_loop_calls(k: KernelFacts) -> list[Call]:
    """Precise float transcendental calls that run inside a loop of a `__global__` kernel (its own,
    or one around the call of the device helper holding them)."""
    return [c for c, _ in _hot(k)]


def _fast(k: KernelFacts) -> list[int]:
    return [c.line for c in k.calls if _FAST.match(c.name)]


def _accuracy_named(k: KernelFacts) -> bool | None:
    return bool(_ACCURACY_NAME.search(k.name)) or None


def _double(k: KernelFacts) -> list[int]:
    return [ln for v, t in (k.var_types or {}).items() if _DOUBLE.search(t or "") and (ln := k.names.get(v, 0))]


def _double_param(p: Param, k: KernelFacts) -> bool:
    return bool(_DOUBLE.search(p.annotation or ""))


def _global_access_lines(k: KernelFacts) -> set[int]:
    pointers = pointer_names(k)
    return {s.line for s in subscripts(k) if s.base in pointers}


def _global_accesses(k: KernelFacts) -> int:
    """Distinct global element accesses (`x[i]` read and `y[i]` written count two)."""
    pointers = pointer_names(k)
    return len({(s.base, re.sub(r"\s+", "", s.index)) for s in subscripts(k) if s.base in pointers})


def fast_math_pays(k: KernelFacts, wl: Workload) -> Payoff:
    """Pays where the transcendental is what a loop does (no global access in it, or ≥2 calls per
    access); memory-bound past L2 otherwise (does not pay for exp/log; pow/sin/cos stay open)."""
    hot = _hot(k)
    calls = [c for c, _ in hot]
    if not calls:
        return Payoff(UNKNOWN, "no precise transcendental in a loop")
    access = _global_access_lines(k)
    for c, loop_line in hot:
        lp = next((lp for lp in k.loops if lp.line == loop_line), None)
        if lp is not None and not any(lp.line <= ln <= lp.end_line for ln in access):
            return Payoff(PAYS, f"`{c.name}` (line {c.line}) runs in the loop at line {lp.line}, which reads no global "
                          "memory: its operands are in registers or shared memory, so the software transcendental is "
                          "what the loop issues — the SFU intrinsic is one multiply and one MUFU operation")
    heavy = [c for c in calls if _HEAVY.match(c.name)]
    weight = len(calls) + (_HEAVY_WEIGHT - 1) * len(heavy)
    accesses = _global_accesses(k)
    if weight >= _CALLS_PER_ACCESS * max(1, accesses):
        return Payoff(PAYS, f"{len(calls)} precise transcendental calls ({len(heavy)} of them `pow`/`sin`/`cos`, "
                      f"counted {_HEAVY_WEIGHT}x) for {accesses} global element accesses: the math, not the memory, "
                      "bounds the loop")
    n, name = wl.largest_elements(k)
    if n is not None and 4 * n >= _HBM_BYTES and not heavy:
        return Payoff(DOES_NOT_PAY, f"{len(calls)} `{calls[0].name}` call(s) per {accesses} global element accesses on "
                      f"{name} ({n:,} elements, past L2): memory-bound at HBM bandwidth — a few instructions per "
                      "element more or less do not show")
    what = f"`{heavy[0].name}` (line {heavy[0].line}, tens of instructions)" if heavy else f"`{calls[0].name}`"
    return Payoff(UNKNOWN, f"{what} once per element read: it pays where the kernel is instruction-bound (tensors "
                  "that stay in L2, few bytes per element) — measure", "--shape elements=N (the largest tensor)")


def _precise_loop_lines(k: KernelFacts) -> list[int]:
    """Lines of the precise transcendental calls inside a loop."""
    return [c.line for c in precise_loop_calls(k)]


PRESENT = custom("sfu-intrinsics", "SFU intrinsics (`__expf`, `__logf`, `__powf`, `__sincosf`, `__fdividef`) or "
                 "`.approx` PTX", _fast)
#: the subject: precise float transcendentals in a loop
SUBJECT = custom("precise-transcendental-in-loop", "precise float transcendentals (`expf`, `logf`, `powf`, `sinf`/"
                 "`cosf`, `tanhf`) called inside a loop of a `__global__` kernel",
                 _precise_loop_lines)
ACCURACY_KERNEL = custom("accuracy-sensitive-kernel", "a loss, log-softmax, log-sum-exp or sampling kernel (by "
                         "name): its logs and exps need their ulps", _accuracy_named, signature=True)
DOUBLE = custom("double-precision", "`double` values: the authors chose precision", _double) | \
    params_where(constexpr=False, where=_double_param, name="double-params",
                 describe="`double` parameters: the authors chose precision")

SKELETON = Skeleton(
    id="cuda-fast-math-intrinsics",
    title="SFU intrinsics for transcendentals in hot CUDA loops (__expf, __powf, __sincosf, __logf)",
    summary="Call __expf/__logf/__powf/__sincosf instead of precise expf/powf/sinf/cosf inside a kernel's hot loop.",
    category=Category.ARITHMETIC,
    doc=__doc__,
    ruled_out_by=(r"\bfast[- _]?math\b", r"\b__(expf|sincosf|powf|logf|sinf|cosf)\b", r"\b(sfu|mufu)\b",
                  r"\bintrinsics?\b"),
    present=PRESENT,
    preconditions=[SUBJECT, ~ACCURACY_KERNEL, ~DOUBLE],
    subject=SUBJECT,
    env=Env(backends=("cuda",)),
    helps=("compute",),
    languages=("cuda",),
    payoff=fast_math_pays,
)
