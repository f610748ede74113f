"""Dtype inference from source text: the one place skel guesses whether a value is fp32, a
low-precision float (fp16/bf16) or fp8.

Static and local on purpose: a kernel's dtypes are decided by its caller, so all skel can
read is what the kernel's own code says — casts (``.to(tl.float32)``), typed zeros
(``tl.zeros(..., dtype=tl.float32)``) and element types of pointers. ``""`` means unknown.
"""

from __future__ import annotations

import re

_FP32 = ("tl.float32", "float32")
_LOWP = ("tl.float16", "tl.bfloat16", "float16", "bfloat16", ".dtype", "element_ty")
_FP8 = ("float8",)
_LOWP_OPERAND = ("float16", "bfloat16", ".dtype", "element_ty")
_HEAD = re.compile(r"[A-Za-z_]\w*")


def value_dtype(value_text: str) -> str:
    """Dtype of an assignment's right-hand side: what the extractor records per variable."""
    if any(s in value_text for s in _FP8):
        return "fp8"
    if any(s in value_text for s in _FP32):
        return "fp32"
    if ".to(" in value_text and any(s in value_text for s in _LOWP):
        return "lowp"
    return ""


def operand_dtype(text: str, var_dtypes: dict[str, str]) -> str:
    """Dtype of an operand's source text (a ``tl.dot`` argument): its own cast if it has
    one, else what the variable it starts with was assigned."""
    text = text.strip()
    if ".to(" in text or "tl." in text:
        if "float8" in text:
            return "fp8"
        if "tl.float32" in text:
            return "fp32"
        if any(s in text for s in _LOWP_OPERAND):
            return "lowp"
    base = _HEAD.match(text)
    return var_dtypes.get(base.group(0), "") if base else ""


_C_FP8 = re.compile(r"fp8|e4m3|e5m2|float8", re.I)
_C_LOWP = re.compile(r"\b(half2?|__half2?|__nv_bfloat162?|nv_bfloat162?|bf16|fp16|bfloat16(_t)?|float16(_t)?|"
                     r"cutlass::half_t|cutlass::bfloat16_t)\b", re.I)
_C_FP32 = re.compile(r"^(const\s+)?float\b|\bfloat[1-4]?\b")


def dtype_of_c_type(ctype: str) -> str:
    """Dtype of a C++/CUDA declared type (``__nv_bfloat16``, ``float4``, ``__nv_fp8_e4m3``)."""
    if _C_FP8.search(ctype):
        return "fp8"
    if _C_LOWP.search(ctype):
        return "lowp"
    if _C_FP32.search(ctype):
        return "fp32"
    return ""
