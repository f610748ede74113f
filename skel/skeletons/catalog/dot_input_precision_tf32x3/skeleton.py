"""Ask for 3xTF32 on fp32 `tl.dot`s whose error matters.

## What it does
Passes `input_precision="tf32x3"` to a `tl.dot` whose operands are fp32. Triton then
splits each operand into a TF32 "big" part and a TF32 residual and issues three
tensor-core MMAs (big*big + big*small + small*big), recovering close to fp32 accuracy.

## Why it is faster
It is mostly an *accuracy* skeleton. On NVIDIA GPUs the default for fp32 `tl.dot` is
TF32 (10-bit mantissa), whose error grows with the reduction length. `"ieee"` fixes
accuracy but leaves the tensor cores idle; `"tf32x3"` keeps most of the tensor-core
throughput while cutting the error to near-fp32 levels.

## Applies when
- the kernel has a `tl.dot` whose operands are fp32 (cast with `.to(tl.float32)` or
  built from fp32 tiles) and it passes neither `input_precision` nor `allow_tf32`;
- results must match an fp32 reference (triangular solves, cumsum-by-matmul,
  long-context recurrences, losses).

## Does not apply when
- the operands are fp16/bf16/fp8 (`input_precision` only matters for fp32 operands);
- the backend is ROCm: `tf32x3` is CUDA-only (ROCm accepts ieee, bf16x3, bf16x6);
- raw speed is the goal and TF32 error is acceptable: tf32x3 issues three MMAs per
  product, and whether it beats ieee depends on the kernel and the GPU — it is not a
  speed lever by itself; measure;
- under `TRITON_INTERPRET=1` the precision argument is ignored, so CPU tests cannot
  show the difference.
- it is an accuracy technique, not a speed one: on an H200 tf32x3 ran at 0.77× and 0.57× of tf32 on
  batched fp32 chunk products (64- and 128-wide) (`benchmarks/results/gpu-2026-12-01-catalog/verify_catalog_2026-12-01.md`); use it where TF32's error matters, not to go faster.

## References
- Triton `lib/Dialect/TritonGPU/Transforms/F32DotTC.cpp` (the `tritongpu-F32DotTC` pass that expands an `inputPrecision = tf32x3` dot into three TF32 dots)
- Triton `tl.dot` documentation: `input_precision`
"""

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import calls, dot_operands_fp32

FP32_DOT = calls("tl.dot", where=dot_operands_fp32, name="fp32-dot", describe="a `tl.dot` on fp32 operands")
PRECISION_SET = calls("tl.dot", kw="input_precision", name="dot-precision-set",
                      describe="a `tl.dot` with `input_precision`") | calls(
    "tl.dot", kw="allow_tf32", name="dot-allow-tf32", describe="a `tl.dot` with `allow_tf32`")
TF32X3 = calls("tl.dot", kw="input_precision", value="tf32x3", name="dot-tf32x3",
               describe='`tl.dot(..., input_precision="tf32x3")`')

SKELETON = Skeleton(
    id="dot-input-precision-tf32x3",
    title="3xTF32 for fp32 tl.dot",
    summary="Pass input_precision='tf32x3' to fp32 tl.dot: near-fp32 accuracy at tensor-core speed.",
    category=Category.ARITHMETIC,
    doc=__doc__,
    ruled_out_by=(r"\btf32(x3)?\b", r"\binput_precision\b", r"\ballow_tf32\b"),
    present=TF32X3,
    preconditions=[FP32_DOT, ~PRECISION_SET],
    subject=FP32_DOT,
    pays_in="accuracy",
    env=Env(backends=("cuda",), min_cc=80),
    helps=("compute",),
)
