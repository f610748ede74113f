"""``tl.dot`` presence and absence."""

from __future__ import annotations

from skel.skeletons.conditions import Condition, calls

#: The kernel calls ``tl.dot``: tensor-core work, which sets what bounds the kernel.
HAS_DOT = calls("tl.dot", name="dot", describe="a `tl.dot`")


def no_dot(why: str | None = None) -> Condition:
    """No ``tl.dot`` in the kernel. Row-wise and elementwise techniques (persistent rows,
    eviction hints, packed GQA heads, a scan in registers) are for kernels whose cost is
    memory traffic or scalar work, not tensor-core matmuls. ``why`` is appended to the
    description a failed check reports ("no `tl.dot` (why)")."""
    if why is None:
        return ~HAS_DOT
    return ~calls("tl.dot", name="dot", describe=f"a `tl.dot` ({why})")


#: No ``tl.dot`` in the kernel (see ``no_dot``).
NO_DOT = no_dot()

#: A GEMM: a ``tl.dot`` in a loop over K, or ``tl.dot_scaled`` (MX/fp4 operands with their
#: scales; aiter's `_gemm_afp4_wfp4_kernel` is a GEMM with no plain ``tl.dot``).
GEMM_LOOP = calls("tl.dot", "tl.dot_scaled", in_loop=True, name="gemm-loop",
                  describe="a `tl.dot` or `tl.dot_scaled` in a K loop (a GEMM)")
