"""e8m0 (MX) scales decoded by hand: an 8-bit exponent turned into a float scale.

MX formats share one power-of-two scale per 32 values, stored as a biased exponent (bias
127). Without native scaled MMA a kernel decodes it itself, as `tl.exp2(s - 127)` or by
shifting it into the exponent bits of an fp32 (`(s.to(tl.int32) << 23)` bitcast). Such
scales belong to `tl.dot_scaled`, not to a fp32 block-scale multiply."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.patterns import assigns

if TYPE_CHECKING:
    from skel.kernels.model import Assign, KernelFacts

_BIAS = re.compile(r"-\s*127(\.0*)?\b")
_EXPONENT_SHIFT = re.compile(r"<<\s*23\b")
_EXP2 = frozenset({"tl.exp2", "tl.math.exp2", "exp2"})


def _e8m0_decode(a: Assign, k: KernelFacts) -> bool:
    """An assignment decoding an e8m0 exponent (`exp2(s - 127)`, `s << 23`)."""
    return bool(_EXPONENT_SHIFT.search(a.value) or (_BIAS.search(a.value) and _EXP2 & set(a.calls)))


def e8m0_decode_lines(k: KernelFacts) -> list[int]:
    """Lines of assignments decoding an e8m0 exponent (`exp2(s - 127)`, `s << 23`)."""
    return [a.line for a in k.assigns if _e8m0_decode(a, k)]


#: e8m0 scales decoded by hand (`tl.exp2(s.to(tl.float32) - 127)`, `(s.to(tl.int32) << 23)` bitcast).
E8M0_DECODE = assigns(where=_e8m0_decode, name="e8m0-decode",
                      describe="e8m0 scales decoded by hand (`exp2(s - 127)`, `s << 23`)")
