"""Reductions split across programs and merged on the host (`partials.sum(0)` after the launch).

A kernel launched with a grid axis over blocks of its reduction dimension (`i_k =
tl.program_id(0)` selecting `i_k * BK` of K) writes one partial result per block into a
buffer indexed by that program id, and the launching function sums the buffer
(`o = o.sum(0)`). Two skeletons read this: ``split-k-reduction`` (the kernel is already
split, so it is not suggested) and ``in-kernel-reduction`` (the inverse: fold the split
back into a loop when the grid is large without it). One definition keeps the two
mutually exclusive.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.patterns import launches
from skel.skeletons.predicates.names import IDENT, TILE_NAME
from skel.skeletons.predicates.pointers import pointer_arg, pointer_bases
from skel.skeletons.predicates.programs import pid_names

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts, Launch

_HOST_SUM = re.compile(r"\.sum$")
#: Grid axes over sequence chunks or tokens: with one of them the grid is large without a split.
_CHUNK_COUNT = re.compile(r"NT|NC|NS|N_CTX|num_chunks|n_chunks|num_tokens|n_tokens|total_tokens")
#: Tiles of the sequence/row axis: a program id over them splits tokens, not the reduction.
_TOKEN_TILE = re.compile(r"BT|BS|BC|BM|BLOCK_(T|S|M|ROW|ROWS)\w*|ROWS?_\w*")
_TOKEN_IN_GRID = re.compile(r"T|NT|NC|NS|N_CTX|seq_?len\w*|num_tokens|n_tokens|total_tokens")


def _summed_by(ln: Launch, k: KernelFacts) -> list[str]:
    """Kernel parameters whose buffers the function launching ``ln`` sums after it
    (`dg = dg.sum(0)`, matched by the keyword the launch passes or by the same name)."""
    summed = {c.rsplit(".", 1)[0] for c in ln.calls_after if _HOST_SUM.search(c)}
    return [p.name for p in k.params if p.name in summed or ln.kwargs.get(p.name, "").strip() in summed]


def _split_pid_in_address(k: KernelFacts, param: str) -> bool:
    """A program id that tiles a reduction dimension elsewhere (`i_k * BK` in loads) offsets
    `param`'s stored address as a leading index (`dg += i_k * B * T * H`,
    `o + (i_k * all + bos) * V`): one partial buffer per block."""
    values = {a.targets[0]: a.value for a in k.assigns if len(a.targets) == 1}
    texts = [a.value for a in k.assigns if a.op == "+=" and param in a.targets]
    for c in k.calls_named("tl.store"):
        ptr = pointer_arg(c).strip()
        if param in pointer_bases(ptr, k, c.line):
            texts.append(ptr + " " + values.get(ptr, ""))
    for pid in pid_names(k):
        tiles = re.findall(r"\b" + re.escape(pid) + r"\s*\*\s*(" + IDENT.pattern + ")", k.source)
        if not any(TILE_NAME.fullmatch(t) and not _TOKEN_TILE.fullmatch(t) for t in tiles):
            continue
        lead = re.compile(r"\b" + re.escape(pid) + r"\b(?!\s*\*\s*(" + TILE_NAME.pattern + r")\b)")
        if any(lead.search(t) for t in texts):
            return True
    return False


def _merges_split_partials(ln: Launch, k: KernelFacts) -> bool:
    """The launching function sums a buffer that a split program id offsets (one partial per block)."""
    return any(_split_pid_in_address(k, p) for p in _summed_by(ln, k))


def _token_parallel(ln: Launch, k: KernelFacts) -> bool:
    """The launch grid has an axis over sequence chunks or tokens."""
    names = set(IDENT.findall(ln.grid))
    if names & {n for n in names if _TOKEN_IN_GRID.fullmatch(n)}:
        return True
    # `grid = (NK, NT, B * H)` built before the launch
    return bool(IDENT.fullmatch(ln.grid.strip())) and any(_CHUNK_COUNT.fullmatch(n) for n in ln.host_names)


#: Partials per reduction block, summed on the host after the launch (`o = o.sum(0)`).
HOST_MERGED_PARTIALS = launches(
    own=True, where=_merges_split_partials, name="host-merged-partials",
    describe="a split grid axis over the reduction (`i_k * BK`) writing partials that the host sums (`o.sum(0)`)")
#: The launch grid has an axis over sequence chunks or tokens (`(NK, NT, B * H)`): many programs.
TOKEN_PARALLEL_GRID = launches(
    own=True, where=_token_parallel, name="token-parallel-grid",
    describe="a launch grid with an axis over sequence chunks or tokens (`NT`, `cdiv(T, BT)`)")
