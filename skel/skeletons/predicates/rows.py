"""Row-wise kernels: one program per row, the row reduced in one block of 1-D vectors.

Norms, softmax, activations and losses over ``(tokens, hidden)`` activations have this
shape; whether to loop over rows per program (``persistent-kernel``) or tile several
rows per program (``multi-row-per-program``) is decided from the same facts."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.conditions import IDENT, calls, custom, rx
from skel.skeletons.patterns import absent, calls_where
from skel.skeletons.predicates.host import own_launches
from skel.skeletons.predicates.programs import pid_names
from skel.skeletons.predicates.tiles import BROADCAST_2D
from skel.skeletons.predicates.workload import SERVING_ENGINE

if TYPE_CHECKING:
    from skel.kernels.model import Call, KernelFacts

_STRIDE = re.compile(r"(?i)\w*stride\w*|n_cols|n_col|hidden\w*|\w*_dim|D|N|H|C|K|V")
# A dotted name (`x.stride`, `cfg.n_cols`), unlike names.IDENT: the row stride may be read
# from an attribute, and only its last part is checked against _STRIDE.
_DOTTED_NAME = r"[A-Za-z_][\w.]*"


def _one_row_per_program(k: KernelFacts) -> list[int]:
    """A 1-D grid whose program id is a row index (``ptr + pid * row_stride``). Stays a
    function: every program id must read axis 0, and the products are read from both the
    assignments and the calls' arguments."""
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


def _one_d(k: KernelFacts) -> bool:
    """No 2-D broadcast anywhere in the source (a fact of the whole text, with no lines)."""
    return not BROADCAST_2D.search(k.source)


def _within_a_loop(c: Call, k: KernelFacts) -> bool:
    """The call sits within some loop's lines (its header included)."""
    return any(lp.line <= c.line <= lp.end_line for lp in k.loops)


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
ROW_IN_ONE_BLOCK = absent(calls_where("tl.load", where=_within_a_loop, name="load-in-loop",
                                      describe="a `tl.load` within a loop's lines"),
                          name="row-in-one-block", describe="no loop over column blocks (the row fits one block)")
#: No ``[:, None]``/``[None, :]`` anywhere: the kernel works on 1-D row vectors.
ROW_IS_1D = custom("row-is-1d", "1-D row tiles (no `[:, None]` 2-D tiles)", _one_d)


# --- how wide a row is ------------------------------------------------------------------

_ARANGE_BLOCK = re.compile(r"tl\.arange\(\s*0\s*,\s*([A-Za-z_]\w*)\s*\)")
_INT = re.compile(r"\d+")
#: name parts that say a row is one head, one quantisation group or one top-k/expert list
#: (not `hd`: sglang's `hd = num_heads * head_dim` is every head of a token)
_SHORT_PARTS = frozenset({"group", "headdim", "rope", "rotary", "topk", "expts", "experts"})
_SHORT_ROW_MAX = 256  # columns: where our H200 runs saw row-packing pay (64-128 wide rows)


def _short_name(ident: str) -> bool:
    parts = {p for p in ident.lower().split("_") if p}
    return bool(parts & _SHORT_PARTS) or ("head" in parts and bool(parts & {"dim", "size"})) or {"top", "k"} <= parts


def _value(text: str) -> str:
    """The value of a launch argument's source line: `N = group_size [if ...]` -> `group_size`."""
    text = text.split(" [if ", 1)[0]
    return text.split(" = ", 1)[1] if re.match(r"[A-Za-z_]\w* = ", text) else text


def _short_values(texts: list[str]) -> bool:
    """A launch argument whose values (and the `name = value` lines of the names they read)
    size a short row: a literal of at most 256, or a short size by name, with no product
    anywhere along the way (`hd = num_heads * head_dim` is every head of a token)."""
    texts = [t for t in texts if _value(t).strip()]
    if not texts or any("*" in _value(t) for t in texts):
        return False
    for t in texts:
        v = _value(t).strip()
        if _INT.fullmatch(v) and int(v) <= _SHORT_ROW_MAX:
            return True
    return any(_short_name(n) for t in texts for n in IDENT.findall(t.split(" [if ", 1)[0]))


def _short_row(k: KernelFacts) -> list[int]:
    """Lines saying the row is short: the row block (`tl.arange(0, BLOCK)`) is named for a
    head dim, a quantisation group or a top-k/expert list (`HEAD_DIM`, `N_EXPTS_PAD`), or a
    launch passes it a value read from one (`BLOCK = next_power_of_2(N)` after
    `N = group_size`) or a literal of at most 256. A value multiplying such a size
    (`num_heads * head_dim`) is not short, nor is `BLOCK_HD` by its name alone: sglang's
    `hd = num_heads * head_dim` is every head of a token. Stays a function: it reads the
    `tl.arange` blocks and the launches that size them together."""
    aranges = [(c.line, m.group(1)) for c in k.calls_named("tl.arange")
               for m in [_ARANGE_BLOCK.search(f"tl.arange({', '.join(c.args)})")] if m]
    blocks = {b for _, b in aranges}
    lines = [line for line, b in aranges if _short_name(b)]
    for ln in own_launches(k):
        if any(_short_values([ln.kwargs.get(b, ""), *ln.kwarg_sources.get(b, [])]) for b in blocks):
            lines.append(ln.line or min(line for line, _ in aranges))
    return sorted(set(lines))


#: The row is known to be short (a head, a quant group, a top-k list): where packing rows
#: or striding over them pays. In a serving engine a row kernel's row is otherwise the
#: model's hidden size, thousands of columns.
SHORT_ROW = custom(
    "short-row",
    "a short row: its block is named for, or launched from, a head dim, a quantisation group or a "
    "top-k/expert list (`HEAD_DIM`, `N = group_size`), or a literal of at most 256 columns",
    _short_row)

#: ``SHORT_ROW`` where it decides: in a serving engine's module. There a row kernel's row is
#: the model's hidden size (thousands of columns, where our H200 runs saw a grid-stride
#: loop lose, 0.43x at 512 wide) unless its block says head, group or top-k. A training
#: library's row kernels are judged without it: their per-head norms over a plain `D` are
#: where the authors did pack rows (flash-linear-attention's `l2norm`, `layer_norm`).
SHORT_ROW_IN_SERVING = ~SERVING_ENGINE | SHORT_ROW
