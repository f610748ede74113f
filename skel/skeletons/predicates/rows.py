"""Row-wise kernels: one program per row, the row reduced in one block of 1-D vectors.

Norms, softmax, activations and losses over ``(tokens, hidden)`` activations have this
shape; whether to loop over rows per program (``persistent-kernel``) or tile several
rows per program (``multi-row-per-program``) is decided from the same facts."""

from __future__ import annotations

import re

from skel.skeletons.conditions import calls, custom, rx
from skel.skeletons.predicates.programs import pid_names
from skel.skeletons.predicates.tiles import BROADCAST_2D

_STRIDE = re.compile(r"(?i)\w*stride\w*|n_cols|n_col|hidden\w*|\w*_dim|D|N|H|C|K|V")
# A dotted name (`x.stride`, `cfg.n_cols`), unlike names.IDENT: the row stride may be read
# from an attribute, and only its last part is checked against _STRIDE.
_DOTTED_NAME = r"[A-Za-z_][\w.]*"


def _one_row_per_program(k) -> list[int]:
    """A 1-D grid whose program id is a row index (``ptr + pid * row_stride``)."""
    pid_calls = k.calls_named("tl.program_id")
    if not pid_calls or any((c.args[:1] or [c.kwargs.get("axis", "0")])[0].strip() not in ("0", "axis=0")
                            for c in pid_calls):
        return []
    pids = pid_names(k)
    if not pids:
        return []
    texts = [(a.line, a.value) for a in k.assigns] + [(c.line, a) for c in k.calls for a in c.args]
    hits = []
    patterns = [(p, rx(r"\b" + re.escape(p) + r"\b\s*\*\s*(" + _DOTTED_NAME + ")"),
                 rx("(" + _DOTTED_NAME + r")\s*\*\s*\b" + re.escape(p) + r"\b")) for p in pids]
    for line, text in texts:
        for p, times_stride, stride_times in patterns:
            if p not in text:  # both patterns spell the name out
                continue
            for m in times_stride.finditer(text):
                if _STRIDE.fullmatch(m.group(1).split(".")[-1]) and "tl.arange" not in text:
                    hits.append(line)
            for m in stride_times.finditer(text):
                if _STRIDE.fullmatch(m.group(1).split(".")[-1]) and "tl.arange" not in text:
                    hits.append(line)
    return hits


def _one_d(k) -> bool:
    return not BROADCAST_2D.search(k.source)


def _no_column_loop(k) -> bool:
    loads = [c.line for c in k.calls if c.name == "tl.load"]
    return not any(lp.line <= ln <= lp.end_line for lp in k.loops for ln in loads)


#: A 1-D grid whose program id indexes a row (``ptr + pid * row_stride``): one program
#: per row, the launch shape persistent and multi-row kernels replace.
ONE_ROW_PER_PROGRAM = custom(
    "one-row-per-program",
    "a 1-D grid whose program id indexes a row (`ptr + pid * row_stride`)",
    _one_row_per_program,
)
#: A reduction over the row outside loops (``tl.sum``/``tl.max``...): the row is reduced
#: in registers, so its width fits one block.
ROW_REDUCTION = calls("tl.sum", "tl.max", "tl.min", "tl.argmax", "tl.argmin", in_loop=False,
                      name="row-reduction", describe="a reduction over the row (`tl.sum`/`tl.max`)")
#: No load inside a loop: the row is read in one block, not streamed over column blocks.
ROW_IN_ONE_BLOCK = custom("row-in-one-block", "no loop over column blocks (the row fits one block)",
                          _no_column_loop)
#: No ``[:, None]``/``[None, :]`` anywhere: the kernel works on 1-D row vectors.
ROW_IS_1D = custom("row-is-1d", "1-D row tiles (no `[:, None]` 2-D tiles)", _one_d)
