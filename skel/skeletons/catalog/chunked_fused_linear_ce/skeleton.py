"""Fused linear + cross-entropy: logits chunk by chunk, the gradient written into them.

## What it does
The language-model head computes `logits = x @ W.T` over the whole batch (`[BT, V]`,
V = 32K-256K) and a cross-entropy kernel then reads them, writes the loss and a
`[BT, V]` gradient, from which the host computes `grad_x = dlogits @ W` and
`grad_W = dlogits.T @ x`. The fused form never builds the full logits: the host loops over
row chunks,

    for start in range(0, BT, chunk):
        logits_c = x[start:end] @ W.T                  # [chunk, V]
        ce_kernel[(end - start,)](logits_c, target[start:end], loss[start:end], ...)
        # the kernel overwrote logits_c with d loss / d logits_c
        grad_x[start:end] = logits_c @ W
        grad_W.addmm_(logits_c.T, x[start:end])

and the kernel, after its online log-sum-exp pass over the row, stores
`softmax - onehot(target)` *into the logits buffer* it read. The chunk size is chosen so
one chunk of logits is about the size of `x` (`chunk = next_power_of_2(cdiv(BT,
cdiv(V, H)))`).

## Why it is faster
It is above all a memory technique: the unfused path holds `logits` and `dlogits`, two
`[BT, V]` tensors — 8K tokens x 128K vocabulary is 2 GB each in bf16, more than the rest
of a layer's activations — and their peak decides the largest batch or sequence that
fits. Chunking bounds the peak at one `[chunk, V]` buffer, reused for the logits and the
gradient. Time stays about the same (the same matmuls, in smaller pieces, and one
fewer `[BT, V]` write and read because the gradient overwrites the logits instead of
going to a fresh buffer); the bigger batch the memory allows is where the speed comes
from.

## Applies when
- a cross-entropy-style kernel (it loads an integer target/label per row and
  exponentiates the row: softmax, log-sum-exp) is launched on logits that the same host
  function computes with a matmul just before (`torch.matmul`, `F.linear`, `.mm`);
- the vocabulary is large next to the hidden size (LM heads: V / H of 8-64), so the
  `[BT, V]` tensors dominate memory;
- training, or any use where the logits themselves are not needed afterwards.

## Does not apply when
- the logits are returned or reused (sampling, distillation against the full
  distribution, logging): they must be materialised anyway;
- the kernel receives logits from elsewhere (the matmul is in another module): the
  change is in the caller, which must own both the matmul and the loss;
- small vocabularies (classification heads): `[BT, V]` is small;
- bitwise-identical `grad_W` across chunk sizes is required: the chunked `addmm_`
  accumulates in a different order (and in bf16 if `grad_W` is bf16 — accumulate in fp32).

## References
- Liger-Kernel `src/liger_kernel/ops/fused_linear_cross_entropy.py` (`fused_linear_cross_entropy_forward`: — at `5e3bf99abb`, before 2025-07-01
  the chunk loop, `chunk_size`, `torch.addmm` into `grad_weight`, v0.5.10)
- Liger-Kernel `src/liger_kernel/ops/cross_entropy.py` (`liger_cross_entropy_kernel`: the gradient stored — at `5e3bf99abb`, before 2025-07-01
  into `X_ptr`, the logits it read, v0.5.10)
- flash-linear-attention `fla/modules/fused_linear_cross_entropy.py` (`cross_entropy_kernel`, — at `49b00f0a94`, before 2025-07-01
  `fused_linear_cross_entropy_forward`, v0.2.2)
- Wijmans et al., "Cut Your Losses in Large-Vocabulary Language Models" (arXiv:2411.09009): the same
  memory argument, taken further
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.patterns import calls_where
from skel.skeletons.predicates.host import calls_before_launch, launch_lines
from skel.skeletons.predicates.pointers import in_place_lines, pointer_arg, pointer_bases

if TYPE_CHECKING:
    from skel.kernels.model import Call, KernelFacts

#: A host matmul that materialises logits.
_MATMUL = re.compile(r"(?:^|\.)(matmul|mm|linear|addmm|einsum)$")
#: Integer targets of a classification loss.
_TARGET = re.compile(r"(?i)(y|t|target|targets|label|labels|tgt)(_?ptr)?|(y|target|label)_\w*")


def _reads_target(c: Call, k: KernelFacts) -> bool:
    """A load from a target/label argument."""
    return any(_TARGET.fullmatch(b) for b in pointer_bases(pointer_arg(c), k, c.line))


def _host_logits_matmul(k: KernelFacts) -> list[int] | None:
    """The launching function computes the logits with a matmul before the launch."""
    if calls_before_launch(k, _MATMUL):
        return launch_lines(k)
    return None


_EXP = {"exp", "exp2", "log", "log2", "logsumexp"}


def _is_exp_call(c: Call, k: KernelFacts) -> bool:
    """An exponential or a logarithm (`tl.exp`, `tl.math.log2`, an `exp` helper)."""
    return c.name.split(".")[-1] in _EXP


CE_KERNEL = calls_where("tl.load", where=_reads_target, name="cross-entropy-kernel",
                        describe="a kernel loading an integer target per row") & calls_where(
    where=_is_exp_call, name="row-exp", describe="an exponential or logarithm over the row (`tl.exp`, an `exp` helper)")
HOST_LOGITS_MATMUL = custom(
    "host-logits-matmul", "the launcher computes the full logits with a matmul just before the launch",
    _host_logits_matmul)
def _in_place(k: KernelFacts) -> list[int]:
    """A load and a later store through the same argument (``in_place_lines``): across
    calls, so not a pattern."""
    return in_place_lines(k)


GRAD_INTO_LOGITS = custom(
    "gradient-into-logits", "the kernel writes its gradient into the logits it read (in place)", _in_place)

SKELETON = Skeleton(
    id="chunked-fused-linear-ce",
    title="Chunked fused linear + cross-entropy (dlogits in place)",
    summary="Logits chunk by chunk, cross-entropy + gradient written in place: [BT, V] never materialises.",
    category=Category.FUSION,
    doc=__doc__,
    present=GRAD_INTO_LOGITS & CE_KERNEL,
    preconditions=[CE_KERNEL, HOST_LOGITS_MATMUL],
    subject=CE_KERNEL,
    env=Env(),
    helps=("memory",),
)
