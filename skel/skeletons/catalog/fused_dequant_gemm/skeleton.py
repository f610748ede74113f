"""Dequantise packed int4/int8 weights inside the GEMM's K loop, not into an fp16 copy that a matmul reads back.

## What it does
A weight-only quantised linear layer (GPTQ/AWQ/HQQ int4, int8 weight-only) keeps its weights
packed — eight 4-bit values an int32 — with one scale (and zero point) per group of K. The
unfused form runs a dequantisation kernel that unpacks the whole weight matrix into an fp16
/ bf16 copy, `w = ((qw >> shift) & 0xF) - zero) * scale`, stores it, and then calls a matmul
(`torch.matmul`, `F.linear`, a Triton GEMM) that reads the copy back. The fused form loads
the packed tile in the GEMM's K loop and unpacks it in registers right before the dot:

    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs)                                          # [BM, BK] activations
        qw = tl.load(qw_ptr + (offs_k[:, None] // 8) * stride_qk + offs_n[None, :])
        w = (qw >> ((offs_k[:, None] % 8) * 4)) & 0xF                # unpack in registers
        s = tl.load(s_ptr + (k // GROUP) * stride_sk + offs_n)       # the group's scales
        acc = tl.dot(a, ((w - 8) * s[None, :]).to(a.dtype), acc)

## Why it is faster
At small M (decode, a few to a few dozen tokens) a linear layer is a stream over its
weights: each weight is used M times, far below the ~300 flops a byte where an H100 turns
compute-bound. The unfused form moves, per weight, 0.5 byte (packed read) + 2 (fp16 write)
+ 2 (the matmul's read) = 4.5 bytes; the fused kernel reads 0.5: up to 9x less traffic,
and one launch instead of two. The unpack is a shift, a mask and a multiply per weight,
hidden under the memory stream. At large M the GEMM is compute-bound: the dequantisation
pass costs the same once however large M is, while the fused kernel repeats the unpack in
every M-tile program and the integer work competes with the MMA issue — torchao's HQQ
kernel measured 4.2x over dequantise-then-matmul at M=16 (A6000) but only 1.08x at
M=1024, and on par or marginally worse than torch on an H100.

## Applies when
- a kernel with no `tl.dot` unpacks loaded packed integers (`qw >> shift`, with `& 0xF` /
  a mask) into a stored wide tensor, and the function launching it calls a matmul after
  the launch (`torch.matmul`, `torch.mm`, `F.linear`, `torch.addmm`); or
- a `tl.dot` GEMM whose launcher dequantises its weight first (a `dequant*` / `unpack*`
  call, or the launch of a `*dequant*_kernel`, before the launch);
- pays when the GEMM is memory-bound on weights: M (the activation rows, tokens) ≤ 64;
  does not pay past M = 1,024; between, and with M unknown, it is conditional
  (`--shape M=N`).

## Does not apply when
- the GEMM already unpacks in its K loop (`(qw >> shift) & 0xF` feeding `tl.dot`): fused;
- the dequantised copy is cached and reused across many calls (dequantise once at load
  time, serve large-M prefill from it): the pass is amortised, and fusing only adds
  per-tile unpack work;
- a dequantiser whose output feeds no matmul (a KV-cache or embedding dequantisation, a
  reference check): there is no GEMM to fuse into;
- fp8 block-scaled GEMMs (fp8 tiles times per-block scales, no unpacking): that is
  `block-scaled-fp8-gemm`; MX e8m0 scales: `dot-scaled-mx`.
Keep `BLOCK_K` a divisor of the group size (a K tile never straddles two scale groups) and
of the packing (eight values an int32); the matmul `x @ w` written as an operator is not a
host call the extractor sees: the rule then needs a named call.

## References
Promoted from the candidate clusters "message: quantization" (`skel skeletons candidates`:
5 repositories, 7 commits) and "+ call tl.cdiv" (2 repositories); the weight-only GEMM
instances and the Triton kernels of the mined repositories that do it:
- bitsandbytes `csrc/kernels.cu` (`kgemm_4bit_inference_naive`: the 4-bit inference GEMV unpacks NF4/FP4 nibbles
  with the block's absmax inside its dot-product loop, no fp16 weight materialised) — at `81e6345ddf`, 2024-12-05,
  "LLM.int8() Refactoring: Part 1 (#1401)"
- exllamav2 `exllamav2/exllamav2_ext/cuda/q_matrix.cu` (`reconstruct_kernel`; `cuda/q_gemm.cu`'s
  `gemm_half_q_half_cuda`: above `MAX_Q_GEMM_ROWS` = 50 rows it reconstructs fp16 weights and calls
  `cublasHgemm`, below it runs the fused int4 GEMM — the payoff's split, in the code) — at `f79e16c5d0`,
  2023-09-07, "Optimization, wider loads in EXL2 kernel (int4)"
- lmdeploy `lmdeploy/pytorch/kernels/cuda/awq_kernels.py` (`awq_linear_kernel`: AWQ int4 weights unpacked with
  `weight >> (order * 4)` and the group's scales and zeros in the K loop, then `tl.dot`) — at `e8a1a33aa8`,
  2024-09-10, "Refactor pytorch engine (#2104)"; its rewrite at `bec8f24ceb`, 2024-12-31, "Optimize awq kernel in
  pytorch engine(#2965)" drops the `awq_ext` CUDA fallback for small batches and runs the fused kernel for every M
- torchao `torchao/prototype/hqq/kernels.py` (`_mixed_mm_kernel`: u4/s4 weights unpacked with shifts in the K loop,
  scaled and shifted by group scales and zeros, then `tl.dot`; its README's table against the unfused
  dequantise-then-`torch.matmul` HQQ module) — at `e1482446b4`, 2024-04-24, "Fused HQQ Quantization Gemm (#153)"
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.kernels.flow import flow_of, has_call
from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN, Category, Env, Payoff, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.predicates.dots import HAS_DOT, no_dot
from skel.skeletons.predicates.host import calls_after_launch, calls_before_launch, launch_lines, own_launches

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts
    from skel.skeletons.base import Workload  # the floor re-exports the type (catalog modules import no kernels.workload)

#: at or below this many activation rows a weight-only GEMM streams its weights (memory-bound)
MEMORY_BOUND_M = 64
#: past this many rows the GEMM is compute-bound: one dequantisation pass is amortised
COMPUTE_BOUND_M = 1024
#: a mask that keeps one packed field (`& 0xF`, `& 15`, `& mask`, `& ((1 << bits) - 1)`), or the
#: left shift of a sign-extending unpack (`(qb << 4) >> 4`, torchao's HQQ kernel)
_FIELD_MASK = re.compile(r"&\s*\(*\s*(0x[0-9a-fA-F]+|\d+|\w*mask\w*|1\s*<<)|<<", re.I)
#: a host matmul that reads the stored copy (not the operator `@`, which is no call)
_HOST_MATMUL = re.compile(r"(?:^|\.)(matmul|mm|addmm|bmm|linear|einsum)$")
#: a host dequantiser or unpacker run before a GEMM's launch
_HOST_DEQUANT = re.compile(r"(?i)(?:^|\.|_)(dequant\w*|unpack\w*)$")
#: a dequantising jit kernel launched by the same function (`_dequant_int4_kernel[grid](...)`)
_DEQUANT_KERNEL = re.compile(r"(?i)^\w*(dequant|unpack)\w*_kernel$")
#: the activation-row count, as a parameter or a size
_M_NAME = re.compile(r"^(M|m|num_tokens|n_tokens|batch_tokens)$")
#: a pointer to the activations (`a_ptr`, `x_ptr`, `A`, `input_ptr`)
_ACT_PTR = re.compile(r"(?i)^(a|x|inp|input|act|a_ptr|x_ptr|input_ptr|act_ptr|inp_ptr)$")


def _unpacks(k: KernelFacts, in_loop: bool | None = None) -> list[int]:
    """Lines where loaded integers are unpacked: a right shift of a value read from memory,
    with a field mask (`& 0xF`) or a sign-extending left shift in the kernel. ``in_loop``: only inside (True) or outside
    (False) loops."""
    if not _FIELD_MASK.search(" ".join(a.value for a in k.assigns)):
        return []
    fl = flow_of(k)
    if not fl.ok:
        return []
    lines = []
    for defs in fl.defs.values():
        for d in defs:
            if ">>" not in fl.text(d.value) or (in_loop is not None and bool(d.loops) != in_loop):
                continue
            if has_call(fl.closure(d.value)[1], "tl.load"):
                lines.append(d.line)
    return sorted(set(lines))


def _unpacked_in_loop(k: KernelFacts) -> list[int]:
    """Lines of `tl.dot`s in a loop whose operand is unpacked there from loaded integers
    (`(qw >> shift) & 0xF` on a tile loaded in the same loop). An operand computed from
    another dot (attention probabilities masked by unpacked bits) is no weight."""
    if not _unpacks(k, in_loop=True):
        return []
    fl = flow_of(k)
    lines = []
    for c in fl.named("tl.dot"):
        if not c.loops:
            continue
        for i, kw in ((0, "input"), (1, "other")):
            op = c.arg(i, kw)
            if op is None:
                continue
            exprs = fl.closure(op, within=c.loops[-1])[1]
            if has_call(exprs, "tl.dot"):
                continue
            if has_call(exprs, "tl.load") and any(">>" in fl.text(e) for e in exprs):
                lines.append(c.line)
    return sorted(set(lines))


def _dequant_stored_then_matmul(k: KernelFacts) -> list[int]:
    """The kernel unpacks packed weights and stores them; its launcher calls a matmul after."""
    unpack = _unpacks(k)
    if not unpack or not k.calls_named("tl.store") or not calls_after_launch(k, _HOST_MATMUL):
        return []
    return unpack + launch_lines(k)


def _gemm_after_host_dequant(k: KernelFacts) -> list[int]:
    """A dot kernel whose launcher dequantises first: a `dequant*`/`unpack*` call, or the
    launch of a `*dequant*_kernel`, in the launching function."""
    if not k.calls_named("tl.dot"):
        return []
    own = own_launches(k)
    beside = any(n != k.name and _DEQUANT_KERNEL.match(n) for ln in own for n in ln.host_names)
    if beside or calls_before_launch(k, _HOST_DEQUANT):
        return launch_lines(k)
    return []


FUSED_UNPACK = custom(
    "weights-unpacked-in-k-loop",
    "packed integers unpacked (`(qw >> shift) & 0xF`) inside the loop that feeds a `tl.dot`",
    _unpacked_in_loop)
DEQUANT_THEN_MATMUL = custom(
    "dequantised-copy-then-matmul",
    "packed weights unpacked and stored as a wide copy (`(qw >> s) & 0xF` then `tl.store`), the launcher "
    "calling a matmul on it after the launch",
    _dequant_stored_then_matmul)
GEMM_AFTER_DEQUANT = custom(
    "gemm-after-host-dequant",
    "a `tl.dot` GEMM whose launcher dequantises its weight first (`dequant*` before the launch)",
    _gemm_after_host_dequant)
UNFUSED_DEQUANT_GEMM = (DEQUANT_THEN_MATMUL & no_dot("a dequantisation kernel")) | GEMM_AFTER_DEQUANT


def _rows(k: KernelFacts, wl: Workload) -> tuple[int | None, str]:
    """The activation rows: ``M`` (or a parameter named like it) given, else the first
    dimension of the activation pointer's shape."""
    for name in ("M", *(p.name for p in k.params if _M_NAME.match(p.name))):
        m = wl.size(name)
        if m is not None:
            return m, name
    for name, shape in wl.shapes.items():
        if _ACT_PTR.match(name) and len(shape) >= 2:
            rows = 1
            for d in shape[:-1]:
                rows *= d
            return rows, f"{name}'s rows"
    return None, ""


def weights_dominate(k: KernelFacts, wl: Workload) -> Payoff:
    """Fusing pays while the GEMM streams its weights: M ≤ 64 rows pays; M > 1,024 is
    compute-bound, where one dequantisation pass is amortised."""
    m, name = _rows(k, wl)
    if m is None:
        return Payoff(UNKNOWN, f"pays if the GEMM is memory-bound on its weights (M ≤ {MEMORY_BOUND_M} activation rows)",
                      "--shape M=N (the activation rows: tokens in the batch)")
    if m <= MEMORY_BOUND_M:
        return Payoff(PAYS, f"{name} = {m:,} rows: each weight is used {m:,} times, far below the ~300 flops a byte "
                      "where an H100 turns compute-bound; reading 0.5 byte a weight instead of 4.5 decides")
    if m > COMPUTE_BOUND_M:
        return Payoff(DOES_NOT_PAY, f"{name} = {m:,} rows: the GEMM is compute-bound; one dequantisation pass is "
                      "amortised over the rows, while the fused kernel repeats the unpack in every M tile")
    return Payoff(UNKNOWN, f"{name} = {m:,} rows is between memory-bound (≤ {MEMORY_BOUND_M}) and compute-bound "
                  f"(> {COMPUTE_BOUND_M:,}): measure it with `skel verify`")


SKELETON = Skeleton(
    id="fused-dequant-gemm",
    title="Dequantise packed int4/int8 weights in the GEMM's K loop (weight-only quantised linear)",
    summary="Unpack and scale packed weights in registers inside the K loop before tl.dot; no fp16 weight copy.",
    category=Category.FUSION,
    doc=__doc__,
    ruled_out_by=(r"\bfused?\b.*\bdequant\w*", r"\bdequant\w*.*\b(gemm|matmul|k[\s-]?loop)\b"),
    present=FUSED_UNPACK & HAS_DOT,
    preconditions=[UNFUSED_DEQUANT_GEMM],
    subject=UNFUSED_DEQUANT_GEMM,
    env=Env(),
    payoff=weights_dominate,
    helps=("memory", "latency"),
)
