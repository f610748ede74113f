"""Guard bands: every tensor a kernel gets sits inside a larger buffer whose bands before and
after it hold poison (NaN for floats, a sentinel for integers and bools).

A kernel that writes past a tensor's end changes a band: caught after the launch, bit for
bit, and reported with the tensor and the offset. A kernel that reads past an input's end
reads NaN, which lands in an output where the reference has a number; ``nan_source`` then
reruns the launch with finite bands, and with one input's band poisoned at a time, to say
which input was read past and on which side.

Only tensors that own their storage exactly are moved into a guarded buffer: a view into a
larger buffer (a slice of a packed buffer, a tensor placed past 2**31 elements on purpose)
is the harness's layout and is left as it is, as are tensors that need grad, tensor
subclasses, overlapping (expanded) ones and ones past ``MAX_ELEMENTS``. The gaps of a
non-contiguous tensor that owns its storage (its span is larger than its elements) are
guarded too. Row strides are not padded: many honest kernels assume contiguous rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

GUARD_BYTES = 4096  # per side: a whole block read past the end (1024 fp32) still lands in it
MAX_ELEMENTS = 1 << 30  # larger tensors are left unguarded (a copy would double their memory)
SIDES = ("before", "after")


@dataclass
class Guarded:
    """One tensor in its guarded buffer: ``view`` is what the kernel gets."""

    view: Any
    buf: Any
    offset: int  # elements before the view
    span: int  # elements from the view's first to its last, gaps included
    poisoned: tuple[bool, bool]  # whether the band before / after holds poison (else zeros)
    role: int  # 0: an input's bands, 1: an output's (their NaNs differ, see ``_NAN_BITS``)


def _bits(t: Any) -> Any:
    import torch  # torch: 0.8 s to import; only once a kernel runs

    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


#: quiet NaNs with a payload, (input's, output's) bit patterns per dtype name. A value read
#: from an input's band and written past an output's end keeps the input's payload (or
#: becomes the canonical NaN a GPU makes), never the output's, so the write shows; a plain
#: NaN fill would not. fp8 types have no payload to spare: their bands hold the plain NaN.
_NAN_BITS = {"float32": (0x7FC0A5A5, 0x7FC05A5A), "float64": (0x7FF800000000A5A5, 0x7FF8000000005A5A),
             "float16": (0x7EA5, 0x7E5A), "bfloat16": (0x7FE5, 0x7FDA)}


def fill_poison(t: Any, role: int = 0) -> None:
    """NaN for floats (with ``role``'s payload), the dtype's minimum for signed integers,
    maximum for unsigned, True for bool."""
    import torch  # torch: 0.8 s to import; only once a kernel runs

    bits = _NAN_BITS.get(str(t.dtype).removeprefix("torch."))
    if bits is not None:
        _bits(t).fill_(bits[role])
    elif t.dtype.is_floating_point:
        try:
            t.fill_(float("nan"))
        except (RuntimeError, NotImplementedError):  # fp8 without fill_ on this device
            t.copy_(torch.full(t.shape, float("nan"), dtype=torch.float32, device=t.device).to(t.dtype))
    elif t.dtype == torch.bool:
        t.fill_(True)
    else:
        info = torch.iinfo(t.dtype)
        t.fill_(info.min if info.min < 0 else info.max)


def _fill_bands(g: Guarded, buf: Any) -> None:
    for side, poisoned in zip(SIDES, g.poisoned):
        band = buf[:g.offset] if side == "before" else buf[g.offset + g.span:]
        if poisoned:
            fill_poison(band, g.role)
        else:
            band.zero_()


def guard(t: Any, poisoned: tuple[bool, bool] = (True, True), role: int = 0) -> Guarded | None:
    """``t`` copied into a guarded buffer, or None where it is left as it is (see the module
    docstring for which tensors)."""
    import torch  # torch: 0.8 s to import; only once a kernel runs

    if type(t) is not torch.Tensor or t.layout != torch.strided or t.requires_grad or t.is_complex():
        return None
    if t.numel() == 0 or t.numel() > MAX_ELEMENTS or t.element_size() not in (1, 2, 4, 8):
        return None
    if any(s <= 0 and n > 1 for n, s in zip(t.shape, t.stride())):
        return None  # expanded (stride 0) or otherwise overlapping
    span = 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
    if t.storage_offset() != 0 or t.untyped_storage().nbytes() != span * t.element_size():
        return None  # a view into a larger buffer: the harness placed it there
    pad = GUARD_BYTES // t.element_size()  # a multiple of 256 bytes: the view keeps its alignment
    with torch.no_grad():
        buf = torch.empty(2 * pad + span, dtype=t.dtype, device=t.device)
        g = Guarded(buf.as_strided(t.shape, t.stride(), pad), buf, pad, span, poisoned, role)
        fill_poison(buf[pad:pad + span], role)  # the gaps of a non-contiguous tensor
        _fill_bands(g, buf)
        g.view.copy_(t)
    return g


def guard_all(xs: tuple | list, poisoned: Callable[[int], tuple[bool, bool]] | None = None, role: int = 0
              ) -> tuple[list[Any], dict[int, Guarded]]:
    """Each tensor of ``xs`` guarded where it can be: (what the kernel gets, the guards by
    position). ``role``: 0 for inputs, 1 for outputs."""
    out, guards = [], {}
    for i, x in enumerate(xs):
        g = guard(x, poisoned(i) if poisoned else (True, True), role)
        if g is None:
            out.append(x)
        else:
            guards[i] = g
            out.append(g.view)
    return out, guards


def violation(g: Guarded) -> str:
    """Where a kernel wrote outside the tensor (its bands, or the gaps between its elements),
    in words; "" when the guard is intact."""
    import torch  # torch: 0.8 s to import; only once a kernel runs

    with torch.no_grad():
        expect = torch.empty_like(g.buf)
        fill_poison(expect[g.offset:g.offset + g.span], g.role)
        _fill_bands(g, expect)
        now = g.buf.clone()
        now.as_strided(g.view.shape, g.view.stride(), g.offset).copy_(
            expect.as_strided(g.view.shape, g.view.stride(), g.offset))
        changed = torch.nonzero(_bits(now) != _bits(expect)).flatten().cpu()
    if changed.numel() == 0:
        return ""
    before = changed[changed < g.offset]
    after = changed[changed >= g.offset + g.span]
    gaps = changed[(changed >= g.offset) & (changed < g.offset + g.span)]
    parts = []
    if after.numel():
        parts.append(f"{after.numel()} element(s) past its end (at storage element {int(after[0]) - g.offset}; "
                     f"its last is {g.span - 1})")
    if before.numel():
        parts.append(f"{before.numel()} element(s) before its start (at storage element "
                     f"{int(before[-1]) - g.offset})")
    if gaps.numel():
        parts.append(f"{gaps.numel()} element(s) in the gaps between its elements (at storage element "
                     f"{int(gaps[0]) - g.offset})")
    return "written outside it: " + ", ".join(parts) + " (guard band changed)"


def nan_source(launch: Callable[[Callable[[int], tuple[bool, bool]]], int], inputs: list[int]) -> str:
    """Which input a launch read past, in words, or "".

    ``launch(poisoned)`` runs the kernel once on fresh inputs whose guard bands are poison
    where ``poisoned(i)`` says (before, after) and zeros elsewhere, and returns how many
    output elements are NaN/Inf where the reference is finite. A read past an end shows as
    more of them with that band poisoned than with every band zero."""
    def only(i: int, k: int) -> Callable[[int], tuple[bool, bool]]:
        return lambda j: (j == i and k == 0, j == i and k == 1)

    base = launch(only(-1, -1))
    for i in inputs:
        for k, side in enumerate(SIDES):
            if launch(only(i, k)) > base:
                where = "past its end" if side == "after" else "before its start"
                return f"read {where} (NaN from the guard band {side} input {i})"
    return ""
