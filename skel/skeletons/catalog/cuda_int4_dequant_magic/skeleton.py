"""Convert packed int4 weights to fp16 two at a time with the 0x6400 magic number, not a shift, mask and I2F each.

## What it does
A CUDA kernel that dequantises packed 4-bit weights (eight to an `uint32_t`, GPTQ/AWQ/EXL2
int4) extracts each field with a shift and a mask and converts it with an int→float
instruction, one value at a time:

    for (int j = 0; j < 8; ++j)
      w[j] = __hmul(__hsub(__int2half_rn((q >> (4 * j)) & 0xF), z), s);

The rewrite writes the fields straight into the mantissa of an fp16 number instead. The
fp16 value 1024.0 is `0x6400` (exponent 2^10, an empty 10-bit mantissa), so `0x6400 | v`
*is* the half `1024 + v` for any `v < 1024`. With two halves in one 32-bit register,

    uint32_t lo = (q & 0x000f000f) | 0x64006400;   // half2(1024 + q0, 1024 + q4)
    uint32_t hi = (q & 0x00f000f0) | 0x64006400;   // half2(1024 + 16*q1, 1024 + 16*q5)
    w01 = __hsub2(as_half2(lo), half2(1024 + z));  // exact integers q - z, two lanes
    w23 = __hfma2(as_half2(hi), half2(1/16), half2(-(64 + z)));

and the same on `q >> 8` for the other four: eight values for one shift, four `lop3.b32`
(`(a & b) | c` in one instruction, written as inline PTX so nvcc cannot split it) and four
packed subtract/fma — then the scale as one `__hmul2` per pair. A signed zero point (`-8`) folds into
the subtracted constant (`0x64086408` = 1032), the ×16 of the high nibble into the fma's
multiplier. bf16 uses 128.0 (`0x4300`, 7 mantissa bits), fp32 `0x4B000000` (2^23), int8
the same idea with `prmt`/`__byte_perm` into `0x6480` (1024 + 128: unsigned bias).

## Why it is faster
An int→float conversion (`I2F`) does not run on the FMA pipes: the CUDA Programming Guide's
throughput table gives 16 conversions per clock per SM on sm_80 and sm_90, against 64
for integer logic and 256 fp16 lanes of `HFMA2`. The shift-mask-convert form spends a shift,
an AND, an `I2F`, a subtract and a multiply per weight; the magic form spends about one
ALU instruction and one half2 instruction per *two* weights and no conversion at all. That
matters where the weights stream: an H100 delivers int4 weights at 3.35 TB/s × 2 per byte
≈ 6.7·10^12 /s, ~29 per SM per clock (132 SMs at 1.75 GHz) — more than the 16 `I2F`s an SM
can issue, so a fused int4 GEMV (or small-M GEMM) that converts one weight per `I2F` is
bound by its conversion pipe below HBM bandwidth. exllamav2's commit that introduced it
replaced `dq_ns(exb(q, i * 4, 0x0f), 8)` (`__int2half_rn((q >> shift) & mask) - zero`) by
`(qa & 0x000f000f) | 0x64006400` plus `__hadd2`/`__hfma2`; Marlin's `dequant` and llm-awq's
`dequantize_s4_to_fp16x2` are the same trick with `lop3` (after FasterTransformer).

When it does not pay: a stand-alone dequantiser that writes an fp16 copy of the weights
moves 0.5 byte in and 2 bytes out per weight, ~6 weights per SM-clock at HBM speed: its
stores bound it and the conversions hide under them. A GEMM at large M (prefill) reuses each
converted weight across the whole M tile: the tensor cores, not the conversions, are the
limit (Marlin applies the trick there too; the gain is largest at small M). The
output layout changes: the pairs come out as (q0, q4), (q1, q5), ... — either the weights are
repacked offline in the interleaved order (AWQ's `[0, 2, 4, 6, 1, 3, 5, 7]`, Marlin's
permutation) or the activations are paired to match (`__byte_perm`), which costs a few
instructions per eight weights.

## Applies when
- a `__global__` kernel (its `__device__` helpers folded in) converts a bit field extracted
  from a packed integer — a mask of 2, 3, 4 or 8 bits (`& 0xF`, `& 0x0f`, `& 15`, `& 0x7`,
  `& 0x3`, `& 0xFF`) of a shifted word (`(q >> (4 * j)) & 0xF`), inline or through an
  integer variable holding one — to floating point with an int→float conversion:
  `__int2half_rn`, `__uint2half_rn`, `__int2bfloat16_rn`, `__int2float_rn`,
  `static_cast<float>(v)`, `(float)(...)`, `(half)v`, `__float2half(v)` on an integer;
- it has no magic-number conversion yet (`0x6400`, `0x64006400`, `0x64086408`, `0x4300`,
  `0x43004300`, `0x4B000000`, `0x64806480` anywhere in the kernel or its helpers);
- **it pays** (a suggestion) when the converted value feeds a product accumulated in a loop
  (`acc += x[k] * w`, `__hfma(x, w, acc)`): a fused dequantising GEMV/GEMM, where the
  conversions per loaded byte are what bounds it; it does not pay when the converted value
  is only stored (a stand-alone dequantiser: bound by its 2-byte stores); otherwise
  (the value goes elsewhere) conditional: it pays as far as the kernel's time is spent in
  the conversion pipe (Nsight Compute's pipe utilisation tells).

## Does not apply when
- the kernel already uses the magic number (a `lop3`/`prmt` dequant helper, `0x64006400`
  constants): nothing left to convert;
- the weights are int8 read as `int8_t` elements and cast one per element (no packed field
  to extract): the int8 trick needs a byte permute and an int8 weight stream is bound by its
  bytes (one conversion per byte, not two);
- the codes map through a lookup table (NF4/FP4 `kNF4[b & 0xF]`, fp4 e2m1 tables): there is
  no int→float conversion of the field, the table already replaces it;
- the field is a flag or an index, never converted (bit-packed masks `(word >> i) & 1`,
  repacking kernels that shuffle nibbles between layouts);
- the target is AMD: `lop3` is PTX (the OR-into-mantissa form with plain `|` still works, and
  the compiler picks `v_perm`/`v_and_or`, but that is another kernel to measure).

## References
- exllamav2 `exllamav2/exllamav2_ext/cuda/quant/qdq_4.cuh` (`dequant_4bit_8`: `(qa & 0x000f000f)
  | c0` with `c0 = 0x64006400`, then `__hadd2`/`__hfma2` with the folded zero, replacing the
  `dq_ns(exb(q, i * 4, 0x0f), 8)` loops of `cuda/q_gemm_dq.cuh`; the same for 2, 3, 5 and
  6-bit fields in `qdq_2.cuh`…`qdq_6.cuh`) — at `92ce76dec1`, 2023-09-02, "Kernel
  optimizations WIP", before 2025-07-01; the GPTQ variant with per-group zero points
  (`dequant_4bit_8_gptq`, called from `q_gemm_kernel_gptq.cuh`) at `3c80d41234`, 2023-09-05,
  "Add 4-bit GPTQ support"
- llm-awq `awq/kernels/dequantize.cuh` (`dequantize_s4_to_fp16x2`: four `lop3.b32` with
  `I4s_TO_F16s_MAGIC_NUM = 0x64006400`, then `sub.f16x2`/`fma.rn.f16x2` with 1/16 and -64;
  "the entire sequence only requires 1 shift instruction") — at `460d6d4545`, 2023-05-31,
  "first commit", before 2025-07-01; its bf16 form (magic `0x4300`) at `e65873f420`,
  2025-02-11, "Bf16 support for tinychat 2.0 on GEMV and GEMM (#255)"
- llm-awq `awq/kernels/csrc/quantization/gemv_cuda.cu` (`gemv_kernel_g128`: the shift-and-convert
  form, `(float)(current_packed_weight & 0xF)` then `current_packed_weight >> 4` per weight) —
  at `148055504a`, 2023-09-06, "[Major] Add new implementation of TinyChat."; its successor
  `awq/kernels/csrc/quantization_new/gemv/gemv_cuda.cu` (`gemv_kernel`) converts with
  `dequantize_s4_to_fp16x2` — at `5f06dbbed1`, 2024-02-23, "[MAJOR] add new backend kernels &
  support multi-modal models", before 2025-07-01
- IST-DASLab marlin `marlin/marlin_cuda_kernel.cu` (`dequant`: `lop3<(0xf0 & 0xcc) | 0xaa>` with
  `EX = 0x64006400`, the `-8` zero point fused into `SUB = 0x64086408` and `ADD = 0xd480d480`,
  "Guarantee that the `(a & b) | c` operations are LOP3s") — at `ac6988b2f8`, 2024-01-17,
  "Version 0.1", before 2025-07-01
- lmdeploy `src/turbomind/kernels/gemm_s_f16/common.h` (`dequantize_s4_to_fp16x2`: the W4A16
  GEMM's int4→half2 conversion, four `lop3.b32` with `I4s_TO_F16s_MAGIC_NUM = 0x64006400`) — at `c3290cadcd`, 2023-08-14, "[Feature]
  Blazing fast W4A16 inference (#202)", before 2025-07-01
- the candidate clusters 1 and 26 of `skel skeletons candidates` ("more/+ pragma unroll": the
  exllamav2 instances 2a2cc16119 and 92ce76dec1 in `q_gemm.cu`, whose dequant helpers are the
  change above)
- NVIDIA FasterTransformer `cutlass_extensions/include/cutlass_extensions/interleaved_numeric_conversion.h`,
  which Marlin's `dequant` names as the strategy it follows; CUDA C++ Programming Guide,
  "Arithmetic Instructions" (conversion throughput per SM)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN, Category, Env, Payoff, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.predicates.cuda import pointer_names
from skel.skeletons.predicates.cuda_tiles import is_kernel

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts
    from skel.skeletons.base import Workload

#: magic-number constants of the technique (fp16 1024 with/without a folded zero point, the
#: int8 bias 0x6480, bf16 128.0, fp32 2^23), as literals appear (any case, leading zeros)
_MAGIC = {"0x6400", "0x64006400", "0x64086408", "0x64806480", "0x6480", "0x4300", "0x43004300", "0x4b000000"}
#: a 2-, 3-, 4- or 8-bit mask: `& 0xF`, `& 0x0f`, `& 15`, `& 0x7`, `& 0x3`, `& 0xFF`
_MASK = r"&\s*(?:0[xX]0*(?:[fF]|7|3|[fF][fF])|15|7|3|255)\b(?!\s*[xX.])"
_SHIFT = re.compile(r">>(?!=)")
_MASKED = re.compile(_MASK)
#: `NAME & MASK`: the low field of a word with no shift of its own
_NAME_MASKED = re.compile(r"\b([A-Za-z_]\w*)\s*\)?\s*" + _MASK)
#: int -> floating-point conversion intrinsics, and float constructors fed an integer
_CONV_CALL = re.compile(r"\b(?:__u?(?:int|short|ll|ushort)2(?:half|bfloat16|float)_r[nzdu]|"
                        r"__float2half(?:_r[nzdu])?|__float2bfloat16(?:_r[nzdu])?)\s*\(")
_FLOAT_TYPES = r"(?:float|half|__half|__nv_bfloat16|nv_bfloat16|__nv_half)"
_CAST = re.compile(r"static_cast\s*<\s*(?:const\s+)?" + _FLOAT_TYPES + r"\s*>\s*\(|"
                   r"\(\s*" + _FLOAT_TYPES + r"\s*\)\s*|(?<![\w.:])" + _FLOAT_TYPES + r"\s*\(")
_IDENT = re.compile(r"[A-Za-z_]\w*")
#: a product accumulated: `+=` of a product, or an fma into itself
_FMA = re.compile(r"\b(?:__h?fma2?\w*|fmaf|__fmaf_r[nzdu]|__hfma2\w*|fma)\s*\(")


def _magic(k: KernelFacts) -> list[int]:
    """Lines with a magic-number constant (the kernel's own or a folded helper's)."""
    return [ln for c, ln in k.constants.items() if c.lower() in _MAGIC]


def _blank_subscripts(text: str) -> str:
    """``text`` with every ``name[...]`` replaced by ``_``: a field used as a table index
    (`kNF4[b & 0xF]`) or a word read inline (`qw[i] >> 4`) is not converted itself."""
    out, i = [], 0
    for m in re.finditer(r"\b[A-Za-z_]\w*\s*\[", text):
        if m.start() < i:
            continue
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"[": 1, "]": -1}.get(text[j], 0)
            j += 1
        out.append(text[i:m.start()] + "_")
        i = j
    return "".join(out) + text[i:]


def _shifted_names(k: KernelFacts) -> set[str]:
    """Variables assigned a right shift (`top = q >> 8`, `q >>= 8`): their low bits are a field."""
    out = set()
    for a in k.assigns:
        if a.targets and (a.op == ">>=" or _SHIFT.search(a.value or "")):
            out.update(_IDENT.findall(a.targets[0])[:1])
    return out


def _is_field(text: str, fields: set[str], shifted: set[str]) -> bool:
    """``text`` (subscripts blanked) extracts a bit field: a mask of a shifted value, a mask of
    a shifted variable, or names a variable that holds a field."""
    if _MASKED.search(text) and (_SHIFT.search(text) or any(m.group(1) in shifted for m in _NAME_MASKED.finditer(text))):
        return True
    return bool(fields & set(_IDENT.findall(text)))


def _field_names(k: KernelFacts, shifted: set[str]) -> set[str]:
    """Integer variables holding an extracted field (`v = (q >> (j * 4)) & 0xF`, `d = v - 8`),
    never a floating conversion of one."""
    names: set[str] = set()
    for _ in range(2):
        for a in k.assigns:
            if not a.targets or "[" in a.targets[0] or a.op != "=":
                continue
            value = _blank_subscripts(a.value or "")
            if _CONV_CALL.search(value) or _CAST.search(value) or a.calls:
                continue
            if _is_field(value, names, shifted):
                names.update(_IDENT.findall(a.targets[0])[:1])
    return names


def _paren_arg(text: str, start: int) -> str:
    """The balanced ``(...)`` content starting at ``start`` (just after an opening paren), or
    the next operand for a C cast without parentheses (`(float)v`)."""
    if start > 0 and text[start - 1] != "(":
        m = re.match(r"\s*(?:\(|([A-Za-z_]\w*))", text[start:])
        if not m or m.group(1) is not None:
            return m.group(1) if m else ""
        start += m.end()
    depth, j = 1, start
    while j < len(text) and depth:
        depth += {"(": 1, ")": -1}.get(text[j], 0)
        j += 1
    return text[start:j - 1]


def _converts_field(text: str, fields: set[str], shifted: set[str]) -> bool:
    text = _blank_subscripts(text)
    for rx in (_CONV_CALL, _CAST):
        for m in rx.finditer(text):
            if _is_field(_paren_arg(text, m.end()), fields, shifted):
                return True
    return False


def _conversions(k: KernelFacts) -> list[tuple[int, str, str]]:
    """(line, target, value) of each assignment converting an extracted bit field to floating point."""
    if not is_kernel(k):
        return []
    shifted = _shifted_names(k)
    fields = _field_names(k, shifted)
    return [(a.line, a.targets[0] if a.targets else "", a.value) for a in k.assigns
            if a.value and _converts_field(a.value, fields, shifted)]


def _conversion_lines(k: KernelFacts) -> list[int]:
    return sorted({ln for ln, _, _ in _conversions(k)})


def _depth(k: KernelFacts, line: int) -> int:
    """How many loops enclose ``line``."""
    return sum(1 for lp in k.loops if lp.line <= line <= lp.end_line)


def _accumulated(k: KernelFacts, convs: list[tuple[int, str, str]]) -> tuple[int, int] | None:
    """(conversion line, accumulation line) where a converted value (or the conversion itself)
    feeds a product accumulated into a variable (`acc += x * w`, `acc = __hfma(x, w, acc)`);
    of several, the conversion in the deepest loop (the per-weight one, not a group's zero)."""
    found = []
    for line, target, _ in convs:
        names = {target.strip()} if target and "[" not in target else set()
        for _ in range(2):  # one step further: `w = __hmul(wq, s)` after `wq = __int2half_rn(...)`
            for a in k.assigns:
                if a.targets and "[" not in a.targets[0] and a.op == "=" and set(a.names) & names:
                    names.add(a.targets[0].strip())
        for a in k.assigns:
            if not a.targets:
                continue
            target_a = a.targets[0].strip()
            value = a.value or ""
            product = (a.op == "+=" and "*" in value) or (
                a.op == "=" and _FMA.search(value) and re.search(r"\b" + re.escape(target_a) + r"\b", value))
            if product and (set(_IDENT.findall(value)) & names or a.line == line):
                found.append((line, a.line))
                break
    return max(found, key=lambda f: _depth(k, f[0]), default=None)


def _stored(k: KernelFacts, convs: list[tuple[int, str, str]]) -> int | None:
    """The line where a converted value is written to a global pointer (`out[i] = ...`)."""
    pointers = pointer_names(k)
    for ln, target, _ in convs:
        base = _IDENT.findall(target)[:1]
        if "[" in target and base and base[0] in pointers:
            return ln
    return None


def magic_dequant_pays(k: KernelFacts, wl: Workload) -> Payoff:
    """Pays in a fused dequantising dot product (the conversion pipe bounds a weight stream);
    does not pay in a stand-alone dequantiser (bound by its stores); unknown otherwise."""
    convs = _conversions(k)
    if not convs:
        return Payoff(UNKNOWN, "no int→float conversion of a packed bit field")
    first = convs[0][0]
    fed = _accumulated(k, convs)
    if fed is not None:
        conv, acc = fed
        return Payoff(PAYS, f"each weight unpacked at line {conv} takes a shift, a mask and an int→float conversion, "
                      f"and feeds the product accumulated at line {acc}: a dequantising GEMV streams int4 weights at "
                      "~29 per SM-clock on an H100 (3.35 TB/s, 132 SMs), more than the 16 conversions an SM issues "
                      "per clock (sm_80/sm_90), so the conversions bound it; ORing two fields into 0x64006400 and "
                      "one `__hsub2`/`__hfma2` converts two weights with no conversion instruction")
    store = _stored(k, convs)
    if store is not None:
        return Payoff(DOES_NOT_PAY, f"the converted values are only stored (line {store}): a stand-alone dequantiser "
                      "moves 0.5 byte in and 2 bytes out per weight, ~6 weights per SM-clock at HBM speed, well "
                      "under the 16 conversions an SM issues per clock — its stores bound it, not the conversions; "
                      "fuse the dequantisation into the GEMM instead")
    return Payoff(UNKNOWN, f"the field converted at line {first} neither feeds an accumulated product nor is stored: "
                  "it pays as far as the kernel's time goes into the conversion pipe (Nsight Compute's pipe "
                  "utilisation tells)")


def _global_kernel(k: KernelFacts) -> bool | None:
    """A `__global__` kernel (a whole-unit fact: no lines of its own)."""
    return is_kernel(k) or None


KERNEL = custom("cuda-kernel", "a `__global__` kernel", _global_kernel, signature=True)
#: the technique is already used: a magic-number constant in the kernel or a folded helper
PRESENT = custom("int4-magic-number", "a magic-number dequantisation (`0x64006400` ORed into the fields, "
                 "`0x4300` for bf16, `0x4B000000` for fp32)", _magic)
#: the subject: a packed bit field converted to floating point with an int→float conversion
SUBJECT = custom("bitfield-int-to-float", "an extracted bit field of a packed integer (`(q >> (4 * j)) & 0xF`) "
                 "converted with an int→float conversion (`__int2half_rn`, `static_cast<float>`, `(half)`)",
                 _conversion_lines)

SKELETON = Skeleton(
    id="cuda-int4-dequant-magic",
    title="int4 → fp16 dequantisation with the 0x6400 magic number (two values per lop3 + hsub2)",
    summary="Unpack packed int4 weights by ORing them into fp16 1024.0's mantissa and one __hsub2/__hfma2, not "
    "shift+I2F.",
    category=Category.ARITHMETIC,
    doc=__doc__,
    ruled_out_by=(r"\bmagic[ _-]?num\w*", r"\b0x6400(?:6400)?\b", r"\blop3\b"),
    present=PRESENT,
    preconditions=[SUBJECT, KERNEL],
    subject=SUBJECT,
    env=Env(backends=("cuda",)),
    helps=("compute",),
    languages=("cuda",),
    payoff=magic_dequant_pays,
)
