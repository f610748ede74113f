"""Accumulate a long fp16/bf16 dot in half2 only for a short block, then flush it into an fp32 accumulator.

## What it does
A CUDA-core reduction that keeps its running sum in 16 bits for the whole loop — a GEMV or
dequantising GEMM whose `half2 acc` takes `__hfma2(w, x, acc)` for every k, a `half` dot
product, a `__nv_bfloat162` sum — is split in two levels: the packed 16-bit FMA chain covers
a short block (the 8 elements of one 16-byte load, one quantisation group) and starts from
zero each block; at the end of the block its two lanes are converted and added into a float
accumulator that carries the rest of the loop:

    half2 acc = __float2half2_rn(0.f);              float acc = 0.f;
    for (int k8 = lane; k8 < K8; k8 += 32) {        for (int k8 = lane; k8 < K8; k8 += 32) {
      ... load 8 w, 8 x as half2 w2[4], x2[4]         ... load 8 w, 8 x as half2 w2[4], x2[4]
      for (int i = 0; i < 4; ++i)              →      half2 part = __hmul2(w2[0], x2[0]);
        acc = __hfma2(w2[i], x2[i], acc);             for (int i = 1; i < 4; ++i) part = __hfma2(w2[i], x2[i], part);
    }                                                 const float2 f = __half22float2(part);
    float s = __low2float(acc) + __high2float(acc);   acc += f.x + f.y;
                                                    }

## Why it is faster
It is about accuracy at (nearly) the same speed. fp16 keeps 11 significant bits, bf16 8: once
a running sum is large next to the products added to it, each addition rounds away most of
the product (at |acc| = 32 the fp16 spacing is 1/32), and the error grows with the number of
terms each accumulator takes — linearly where the products share a sign (positive
activations, P·V, sums of squares), and the sum can overflow 65,504. Accumulating the whole
dot in fp32 fixes it but costs a conversion and a 32-bit FMA per product, giving up the
`HFMA2` rate (two products per instruction). The two-level form keeps `HFMA2` for the inner
block, where the partial sums stay small and only a few roundings happen, and pays one
`__half22float2` and two `FADD`s per block: exllamav2 did exactly this in its GPTQ/EXL2
kernels ("Improve numerical precision in GPTQ dequant, do partial FP32 accum"), 8 to 32
products per half2 block.

## Applies when
- a `__global__` kernel (device helpers folded in) keeps a 16-bit accumulator (`half`,
  `half2`, `__nv_bfloat16`, `__nv_bfloat162`: by its declared type, or by being updated with
  `__hfma2`/`__hadd2`) that is declared outside a loop with a run-time trip count (`while
  (k < end_k)`, `for (k = lane; k < K / 8; k += 32)`) and updated from itself inside it
  (`acc = __hfma2(a, b, acc)`, `acc += x * y`, `acc = dot22_8(dq, a, acc, s)`);
- no 16-bit accumulator of the kernel is converted to float inside a loop (the flush of
  the technique, there already);
- **it pays** (a suggestion) when each accumulator is updated often: with the bound's size
  given (`--shape K=N`), its trip over the loop's step (a literal such as `k8 += 32`; a
  thread-strided step taken as 256 threads) times the constant trips of the loops around the
  update reaches 256 for fp16 (32 for bf16); at 16 (4) or fewer the sum takes a few roundings
  and it does not pay; in between, and without sizes, it is conditional.

## Does not apply when
- the accumulator is already float (`float acc += __half2float(a) * __half2float(b)`, a
  `float2` from `__half22float2`): that is the slow-but-exact end this skeleton moves from
  only for speed — nothing to fix;
- the 16-bit chain is short and fixed (`for (int i = 0; i < 4; ++i) r = __hfma2(...)`
  inside a helper that returns it to a float): that *is* the inner block;
- the running value is a max or a min (`m = __hmax(m, x)`): no rounding accumulates;
- it is an FP8 tensor-core GEMM: the accumulator is inside the MMA, and promoting it per
  K block is `fp8-two-level-accumulation`'s rewrite (WGMMA registers into `final_accum`),
  not a CUDA-core FMA chain;
- a Triton kernel: `tl.dot` accumulates in fp32 unless told otherwise (`out_dtype`); see
  `lowp-dot-fp32-accumulator` for its fp32 tiles.

## References
- exllamav2 `exllamav2/exllamav2_ext/cuda/q_gemm_kernel.cuh` (`gemm_half_q_half_kernel`:
  `half2 block_c[m_count][4]` accumulated over all of K by `dot22_8`/`dot22_16`/`dot22_32`
  becomes `float block_c[m_count][4]`, the new `dot22_8_f` … `dot22_32_f` summing 8–32
  products with `__hfma2` from zero and returning `fma(result_f, qs_f, g_result)` in float) —
  at `54e3cf9a09`, 2023-09-16, "Improve numerical precision in GPTQ dequant, do partial FP32
  accum in GTPQ and EXL2 kernels", before 2025-07-01; the same commit does
  `q_gemm_kernel_gptq.cuh` (`gemm_half_q_half_gptq_kernel`)
- bitsandbytes `csrc/kernels.cu` (`kgemm_4bit_inference_naive`: `T local_C` → `float local_C`
  and a `cub::WarpReduce<float>`: the 4-bit GEMV's sum taken out of 16 bits altogether) — at
  `eefbf60270`, 2023-07-08, "Turning optimization (float accumulation). 185 vs 50.", before
  2025-07-01
- flash-attention `csrc/ft_attention/decoder_masked_multihead_attention_template.hpp`
  (`MMHA_USE_FP32_ACUM_FOR_FMA` switched on: the decoder attention's q·k and P·V FMAs
  accumulate in `float`/`Float8_` instead of half) — at `be1afaa276`, 2023-01-03, "[Gen, FT]
  Use fp32 accum for FMA", before 2025-07-01
- tritonbench `tritonbench/operators/gemm/partition_k.py` (`_matmul_partition_k`: the split-K
  partial buffer `c_buf` made float32 instead of fp16; the message measures the cost, ~94% →
  81% of aten, 86% with interleaved loads — the two-level form is how CUDA-core kernels avoid
  that cost) — at `b69a816aec`, 2025-03-19, "PartitionK fp32 accumulator + interleave loads",
  before 2025-07-01
- the candidate clusters 3 ("+ fp32 values"), 35 ("- lowp values") and 54 ("message:
  precision") of `skel skeletons candidates`; cluster 9 ("- fp32 values") holds the opposite
  moves
- N. J. Higham, "The Accuracy of Floating Point Summation" (SIAM J. Sci. Comput., 1993):
  the recursive sum's error bound grows with the number of terms; blocked (pairwise-like)
  summation divides it by the block length
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN, Category, Env, Payoff, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.predicates.cuda_tiles import is_kernel

if TYPE_CHECKING:
    from skel.kernels.model import Assign, KernelFacts, Loop
    from skel.skeletons.base import Workload

_LOWP = re.compile(r"^(?:const\s+)?(?:__)?(?:half2?|nv_bfloat162?)\s*$")
_BF16 = re.compile(r"bfloat")
#: 16-bit sums and FMAs: their result is 16-bit whatever the declared type says
_ADD16 = re.compile(r"^(?:__h(?:fma|add|sub)2?(?:_rn|_sat|_relu)?)$")
#: running max/min: no rounding accumulates
_MINMAX = re.compile(r"^(?:__h(?:max|min)2?(?:_nan)?|h?fmax|h?fmin|max|min)$")
#: 16 → 32-bit conversions (the flush)
_TO_FLOAT = re.compile(r"^(?:__half2float|__low2float|__high2float|__half22float2|__bfloat162float|"
                       r"__bfloat1622float2|static_cast<float>|float)$")
_IDENT = re.compile(r"[A-Za-z_]\w*")
#: updates per accumulator at which a 16-bit running sum is / is not a problem (fp16: 11 bits, bf16: 8)
_LONG = {"fp16": 256, "bf16": 32}
_SHORT = {"fp16": 16, "bf16": 4}


_CAST = re.compile(r"\b(?:reinterpret|static|const)_cast\s*<[^<>]*>\s*\(")


def _base(target: str) -> str:
    """The variable an assignment target names: `acc`, `block_c[m][0]` → `block_c`,
    `*reinterpret_cast<half2*>(psum + i)` → `psum`."""
    m = _IDENT.match(_CAST.sub("", target).strip().lstrip("*( "))
    return m.group(0) if m else ""


def _accumulates(a: Assign, k: KernelFacts) -> bool:
    """`acc = f(..., acc)` / `acc += ...` with an addition in it (not a max, not a plain scale)."""
    name = _base(a.targets[0]) if a.targets else ""
    if not name or (a.op not in ("+=", "-=") and name not in a.names):
        return False
    if a.op in ("+=", "-=") or any(_ADD16.match(c) or c in k.folded for c in a.calls):
        return True
    return "+" in a.value and not any(_MINMAX.match(c) for c in a.calls)


def _lowp_accumulators(k: KernelFacts) -> dict[str, str]:
    """16-bit accumulators: name -> "fp16"/"bf16" (the kernel's declared type, or a 16-bit add/FMA
    writing it — a helper's local `half2 result` too)."""
    types = k.var_types or {}
    out: dict[str, str] = {}
    for a in k.assigns:
        if a.loop_depth < 1 or not _accumulates(a, k):
            continue
        name = _base(a.targets[0])
        t = types.get(name, "")
        t_plain = re.sub(r"\[.*", "", t).strip()
        if _LOWP.match(t_plain) or (not t and any(_ADD16.match(c) for c in a.calls)):
            out[name] = "bf16" if _BF16.search(t) else "fp16"
    return out


def _runtime(lp: Loop, k: KernelFacts) -> bool:
    """A loop whose trip count is known only at run time: a `while`, or a bound naming a kernel
    parameter or a local variable (not a literal, a template/constexpr constant or a `kName`)."""
    if lp.kind == "while":
        return True
    if lp.kind != "for" or len(lp.args) < 2:
        return False
    runtime = {p.name for p in k.params if not p.constexpr}
    runtime |= {_base(t) for a in k.assigns for t in a.targets if a.op == "=" and "constexpr" not in a.value}
    var = _base(lp.args[0].split("=")[0].split()[-1]) if "=" in lp.args[0] else ""
    names = set(_IDENT.findall(lp.args[1])) - {var}
    return bool(names & runtime)


def _enclosing(k: KernelFacts, line: int) -> list[Loop]:
    return [lp for lp in k.loops if lp.line <= line <= lp.end_line]


def carried_sums(k: KernelFacts) -> list[tuple[Assign, Loop, str]]:
    """(update, the run-time loop it is carried across, "fp16"/"bf16") for each 16-bit accumulator
    declared before a run-time loop and updated from itself inside it."""
    if not is_kernel(k):
        return []
    accs = _lowp_accumulators(k)
    params = {p.name for p in k.params}
    out = []
    for a in k.assigns:
        name = _base(a.targets[0]) if a.targets else ""
        if name not in accs or name in params or a.loop_depth < 1 or not _accumulates(a, k) or k.helper_at(a.line):
            continue  # a pointer parameter's element (`y[i] = __hfma2(a, x[i], y[i])`) is elementwise
        declared = k.names.get(name, a.line)
        index = set(_IDENT.findall(a.targets[0][len(name):]))
        for lp in _enclosing(k, a.line):
            if declared < lp.line and _runtime(lp, k) and not index & set(lp.targets):
                out.append((a, lp, accs[name]))
                break
    return out


def _flushes(k: KernelFacts) -> list[int]:
    """16-bit accumulators converted to float inside a loop (or in a helper called from one)."""
    accs = set(_lowp_accumulators(k))
    called_in_loop = {c.name for c in k.calls if c.name in k.folded and c.loop_depth >= 1 and not k.helper_at(c.line)}
    lines = []
    for c in k.calls:
        if not _TO_FLOAT.match(c.name) or not any(set(_IDENT.findall(x)) & accs for x in c.args):
            continue
        if c.loop_depth >= 1 or k.helper_at(c.line) in called_in_loop:
            lines.append(c.line)
    return lines


def _value(expr: str, sizes: dict[str, int]) -> int | None:
    """An integer expression of sizes (`K / 8`, `n2`, `size_k - offset`), or None."""
    text = re.sub(r"\s+", "", expr)
    if not text or re.search(r"[^\w+\-*/%()]", text):
        return None
    words = set(_IDENT.findall(text))
    if not words <= set(sizes):
        return None
    try:
        node = ast.parse(re.sub(r"(?<!/)/(?!/)", "//", text), mode="eval")
    except SyntaxError:
        return None
    return _eval(node.body, sizes)


def _eval(node: ast.AST, sizes: dict[str, int]) -> int | None:
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, int) and not isinstance(node.value, bool) else None
    if isinstance(node, ast.Name):
        return sizes.get(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _eval(node.operand, sizes)
        return None if v is None else -v
    if isinstance(node, ast.BinOp):
        a, b = _eval(node.left, sizes), _eval(node.right, sizes)
        if a is None or b is None:
            return None
        if isinstance(node.op, ast.Add):
            return a + b
        if isinstance(node.op, ast.Sub):
            return a - b
        if isinstance(node.op, ast.Mult):
            return a * b
        if isinstance(node.op, (ast.FloorDiv, ast.Mod)) and b:
            return a // b if isinstance(node.op, ast.FloorDiv) else a % b
    return None


def _updates(k: KernelFacts, a: Assign, lp: Loop, sizes: dict[str, int]) -> tuple[int | None, str]:
    """How many times one accumulator is updated over the run-time loop: its trip (the bound's
    value over a literal step; a thread-strided step is taken as 256 threads) times the constant
    trips of the loops between it and the update. (None, why) when the sizes do not say."""
    if lp.kind == "while":
        cond = lp.args[0] if lp.args else ""
        bounds = [m.group(1) for m in re.finditer(r"<=?\s*([^&|()]+(?:\([^()]*\))?[^&|()]*)", cond)]
        trip = next((v for v in (_value(b, sizes) for b in bounds) if v is not None), None)
        how = "its bound (the loop's own step not read)"
    else:
        trip = _value(lp.args[1].split("<", 1)[-1].lstrip("="), sizes) if "<" in lp.args[1] else None
        step = re.sub(r"^\s*\w+\s*\+=\s*|^\s*(\+\+\s*\w+|\w+\s*\+\+)\s*$", "", lp.args[2]) if len(lp.args) > 2 else ""
        literal = _value(step or "1", {})
        divisor = literal if literal else 256
        how = f"its bound over a step of {literal}" if literal else "its bound over 256 threads striding it"
        trip = None if trip is None else -(-trip // max(1, divisor))
    if trip is None:
        return None, how
    inner = 1
    for o in k.loops:
        if o is not lp and lp.line <= o.line and o.end_line <= lp.end_line and o.line <= a.line <= o.end_line \
                and (o.line, o.end_line) != (lp.line, lp.end_line):
            v = _value(o.args[1].split("<", 1)[-1].lstrip("="), {}) if len(o.args) > 1 and "<" in o.args[1] else None
            inner *= v if v else 1
    return trip * inner, how


def partial_accumulation_pays(k: KernelFacts, wl: Workload) -> Payoff:
    """Pays for a long running sum (each accumulator updated ≥ 256 times in fp16, 32 in bf16), does
    not for a short one (≤ 16 / 4 updates), else conditional on the reduction length."""
    sums = carried_sums(k)
    if not sums:
        return Payoff(UNKNOWN, "no 16-bit accumulator carried across a run-time loop")
    a, lp, kind = sums[0]
    bound = " ".join(lp.args[:2])
    words = list(dict.fromkeys(_IDENT.findall(bound)))
    names = [n for n in words if n in {p.name for p in k.params if not p.constexpr}]
    local = [n for n in words if n not in names and n in k.var_types and "constexpr" not in k.var_types[n]
             and not re.match(r"k[A-Z]", n) and n not in set(lp.targets) | {_base(t) for t in lp.assigned}]
    where = f"`{_base(a.targets[0])}` ({kind}, line {a.line}) summed across the loop at line {lp.line}"
    if local:
        where += f" (its bound also reads `{local[0]}`, computed in the kernel: the trip may be shorter)"
    updates, how = _updates(k, a, lp, dict(wl.sizes))
    if updates is not None:
        if updates >= _LONG[kind]:
            return Payoff(PAYS, f"{where}: about {updates:,} updates per accumulator ({how}) — a {kind} running sum "
                          "that long rounds each product against a large partial (and can overflow); flushing a "
                          "short block into fp32 bounds the error to the block's")
        if updates <= _SHORT[kind]:
            return Payoff(DOES_NOT_PAY, f"{where}: about {updates:,} updates per accumulator ({how}) — a sum "
                          "that short takes a few roundings")
        return Payoff(UNKNOWN, f"{where}: about {updates:,} updates per accumulator ({how}), between a short sum "
                      "and a long one — compare its error against a float64 reference")
    needs = " ".join(f"--shape {n}=N" for n in names) or "--shape K=N (the reduction length)"
    return Payoff(UNKNOWN, f"{where}: pays for a long running sum (≥ {_LONG[kind]:,} updates per accumulator in "
                  f"{kind})", needs)


def _running_sum_lines(k: KernelFacts) -> list[int]:
    """Lines of the 16-bit running sums carried across a run-time loop."""
    return [a.line for a, _, _ in carried_sums(k)]


PRESENT = custom("fp32-flush", "a 16-bit partial sum converted into a float accumulator inside the loop "
                 "(`acc_f += __low2float(part) + __high2float(part)`)", _flushes)
#: the subject: a 16-bit running sum carried across a run-time loop
SUBJECT = custom("lowp-running-sum", "a `half`/`half2`/`bf16` accumulator declared before a run-time loop and "
                 "updated from itself inside it (`acc = __hfma2(w, x, acc)`)",
                 _running_sum_lines)

SKELETON = Skeleton(
    id="cuda-fp32-partial-accumulation",
    title="Two-level accumulation for CUDA-core fp16/bf16 dots: half2 blocks flushed into fp32",
    summary="Sum a long half2 dot in short __hfma2 blocks from zero and add each block into a float accumulator.",
    category=Category.ARITHMETIC,
    doc=__doc__,
    ruled_out_by=(r"\b(fp32|float|full[- ]precision) accum\w*", r"\baccumulat\w* in (fp32|float)\b",
                  r"\bpartial (fp32 )?accum\w*"),
    present=PRESENT,
    preconditions=[SUBJECT],
    subject=SUBJECT,
    env=Env(backends=("cuda",)),
    helps=("compute",),
    languages=("cuda",),
    pays_in="accuracy",
    payoff=partial_accumulation_pays,
)
