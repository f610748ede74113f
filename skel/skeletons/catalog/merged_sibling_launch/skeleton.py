"""Launch one kernel once over sibling tensors (q and k, gate and up), not once per tensor.

## What it does
A host function that launches the same kernel twice in a row, once per sibling tensor,

    _rope_kernel[(triton.cdiv(T, BT), n_q_heads)](q, cos, sin, q_out, q.stride(0), ...)
    _rope_kernel[(triton.cdiv(T, BT), n_k_heads)](k, cos, sin, k_out, k.stride(0), ...)

is given one launch whose grid covers both: an axis of `n_q_heads + n_k_heads` programs
(or an extra axis of size 2), and a branch on that program id picking the tensor, its
strides and its output:

    head = tl.program_id(1)
    if head < n_q_heads:
        src, dst, stride_s, stride_d = q, q_out, stride_q, stride_qo
    else:
        head -= n_q_heads
        src, dst, stride_s, stride_d = k, k_out, stride_k, stride_ko

The body after the branch is the old kernel's, unchanged.

## Why it is faster
Each Triton launch costs the host a few to tens of microseconds (argument binding, the
cache lookup, the driver call) and the GPU a gap between the two grids, the second of
which also waits for the first's tail. When each launch is small — a decode step's few
tokens, a grid of fewer programs than SMs — that fixed cost is most of the time, and one
launch of both halves halves it; the merged grid also fills SMs that two thin grids
leave idle. When each launch already runs many waves of programs, the saved launch is a
few microseconds in a long kernel and nothing changes.

## Applies when
- a host function in the kernel's file launches the kernel twice back to back, under
  the same `if` tests, with no other launch between;
- the two launches differ in the tensors they pass (`q` then `k`, `gate` then `up`)
  and neither reads what the other writes (no argument of one is an argument of the
  other at another position: a producer-consumer pair is not siblings);
- each launch is small: at most a few waves of programs (the payoff reads
  `--shape programs=N` or the tensors' sizes).

## Does not apply when
- the kernel is launched once (already merged: an axis over both tensors and a branch on
  its program id), or each launch is chosen by a different `if` (only one runs);
- the second launch consumes the first's output (a two-stage reduction, a ping-pong
  between buffers), or applies the kernel to the same tensor again (an in-place chain):
  merging would race;
- the launches are large (≥ 16 waves of programs, tens of MB each): the launch is
  amortised, and the branch only adds registers;
- the two launches differ in constexpr specialisation that would double the merged
  kernel's code paths (a different `BLOCK` per tensor): merge only what one set of
  meta-parameters serves.

## References
- lmdeploy `lmdeploy/pytorch/kernels/apply_rotary_pos_emb.py` (`apply_rotary_pos_emb_kernel` launched on `q` with `grid_q`, then on `k` with `grid_k`, when the head counts differ) — at `344e126d62`, 2023-12-28, "Refactor torch inference engine (#871)", before 2025-07-01
- lmdeploy `lmdeploy/pytorch/kernels/apply_rotary_pos_emb.py` (`apply_rotary_pos_emb_qk_kernel`: one launch for q and k whatever their head counts, the two `grid_q`/`grid_k` launches gone; a later version moved the heads onto a grid axis of `num_heads_q + num_heads_k` with `if head_id < BLOCK_QH:`) — at `eb46b8e6ba`, 2024-04-20, "Optimize apply_rotary kernel and remove useless inference_mode (#1457)", before 2025-07-01
- lightllm `lightllm/models/llama/triton_kernel/rotary_emb.py` (`_rotary_kernel`: Q and K in one launch, replacing a `rotary_emb_fwd` call per tensor) — at `00aeedc349`, 2024-01-25, "[Update] KV Merge And FFn up gate merge. (#320)", before 2025-07-01
- exllamav2 `exllamav2/exllamav2_ext/cuda/rope.cu` (`rope_cuda_kernel`: the CUDA form, one launch for Q and K) — at `19bea25c5a`, 2024-03-10, "RoPE: fuse Q, K kernels", before 2025-07-01
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN, Category, Env, Payoff, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.predicates.host import own_launches
from skel.skeletons.predicates.programs import program_id_vars

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts, Launch
    from skel.skeletons.base import Workload

#: waves of programs per launch at or under which the launch's fixed cost dominates
FEW_WAVES = 4
#: waves per launch past which a saved launch is lost in the kernel's own time
MANY_WAVES = 16
#: elements per launch (largest tensor) at or under which a launch is small: 4 MB in bf16,
#: about a microsecond of HBM traffic on an H100, less than the launch itself
SMALL_ELEMENTS = 1 << 21
#: elements past which each launch runs long (128 MB in bf16: tens of microseconds)
LARGE_ELEMENTS = 1 << 26
#: the name an argument's text starts with (`q` of `q.stride(0)`, `k_out` of `k_out[:, 0]`)
_BASE = re.compile(r"\s*\*?\s*([A-Za-z_]\w*)")
#: a bare name passed as an argument (a tensor, not an expression or a literal)
_NAME = re.compile(r"[A-Za-z_]\w*")
_LITERALS = {"True", "False", "None"}
#: host calls that only read sizes or allocate: between two sibling launches they change nothing
_METADATA = re.compile(r"(?:^|\.)(stride|size|numel|dim|shape|cdiv|next_power_of_2|empty\w*|zeros\w*|ones\w*|"
                       r"new_empty|new_zeros|contiguous|view|reshape|flatten|len|min|max|int|range|get_\w+|"
                       r"element_size|is_contiguous)$")
#: an axis that adds two sizes (`n_q_heads + n_k_heads`) or doubles one (`2 * H`)
_SUM_AXIS = re.compile(r"[A-Za-z_)\]]\s*\+\s*[A-Za-z_(]|\b2\s*\*\s*[A-Za-z_(]|[A-Za-z_)\]]\s*\*\s*2\b")


def _base(text: str) -> str:
    m = _BASE.match(text)
    return m.group(1) if m else ""


def _differing(a: Launch, b: Launch) -> list[tuple[str, str]]:
    """The arguments the two launches pass differently, position by position and keyword by keyword."""
    out = [(x, y) for x, y in zip(a.args, b.args) if x.strip() != y.strip()]
    if len(a.args) != len(b.args):
        out.append(("<arity>", "<arity>"))
    for key in sorted(set(a.kwargs) | set(b.kwargs)):
        x, y = a.kwargs.get(key, ""), b.kwargs.get(key, "")
        if x.strip() != y.strip():
            out.append((x, y))
    return out


def _siblings(a: Launch, b: Launch) -> bool:
    """The launches pass different tensors in the same places, the first argument (the
    primary tensor) among them, and no tensor of one is passed by the other elsewhere
    (one reading what the other writes: a producer and its consumer)."""
    diff = _differing(a, b)
    if not diff or ("<arity>", "<arity>") in diff:
        return False
    tensors = [(x, y) for x, y in diff if _NAME.fullmatch(x.strip()) and _NAME.fullmatch(y.strip())
               and not {x.strip(), y.strip()} & _LITERALS]
    if not tensors:
        return False  # only flags or sizes differ: the same work specialised twice (count, then fill)
    if a.args and b.args and _base(a.args[0]) == _base(b.args[0]):
        return False  # the same primary tensor twice: an in-place chain, or two slices of one buffer
    left = {_base(x) for x, _ in diff} - {""}
    right = {_base(y) for _, y in diff} - {""}
    every_a = {_base(t) for t in [*a.args, *a.kwargs.values()]} - {""}
    every_b = {_base(t) for t in [*b.args, *b.kwargs.values()]} - {""}
    return not (left & every_b) and not (right & every_a)


def _sibling_launch_pairs(k: KernelFacts) -> list[tuple[Launch, Launch]]:
    """Consecutive launches of this kernel in one host function, under the same tests,
    with no other launch between them, on sibling tensors."""
    pairs = []
    mine = sorted((ln for ln in own_launches(k) if ln.line and ln.host_function), key=lambda ln: ln.line)
    for a, b in zip(mine, mine[1:]):
        if a.host_function != b.host_function or a.guards != b.guards or a.launched_as or b.launched_as:
            continue
        between = [o for o in k.launches if o.host_function == a.host_function and a.line < o.line < b.line]
        if between or a.grid.count(",") != b.grid.count(","):
            continue
        calls_between = a.calls_after[:len(a.calls_after) - len(b.calls_after)]
        if any(not _METADATA.search(c) for c in calls_between):
            continue  # the host works on the first launch's results before the second (`offsets.cumsum_()`)
        if _siblings(a, b):
            pairs.append((a, b))
    return pairs


def _sibling_launches(k: KernelFacts) -> list[int]:
    return sorted({ln.line for pair in _sibling_launch_pairs(k) for ln in pair})


def _merged_axis(k: KernelFacts) -> list[int]:
    """One launch whose grid adds two sizes on an axis (`n_q_heads + n_k_heads`), and a
    branch on a program id in the kernel that picks the tensor."""
    pids = program_id_vars(k)
    branches = [i["line"] for i in k.ifs if set(i.get("names", [])) & pids
                and re.search(r"<|>=|>|<=|==", i.get("test", ""))]
    if not branches:
        return []
    launches = [ln.line for ln in own_launches(k)
                if _SUM_AXIS.search(ln.grid) or any(_SUM_AXIS.search(s) for s in ln.grid_sources)]
    return sorted(set(branches + launches)) if launches else []


SIBLING_LAUNCHES = custom(
    "sibling-launches",
    "the same kernel launched twice back to back by one host function, on sibling tensors (`q` then `k`), "
    "neither reading what the other writes",
    _sibling_launches)
MERGED_AXIS = custom(
    "merged-sibling-axis",
    "one launch over both tensors: a grid axis adding two sizes and a branch on that program id",
    _merged_axis)


def small_launches(k: KernelFacts, wl: Workload) -> Payoff:
    """Each launch small (≤ 4 waves of programs, or ≤ 2M elements in its largest tensor)
    pays; large (≥ 16 waves, ≥ 64M elements) does not; in between, or no sizes, unknown."""
    sms = wl.sms
    programs = wl.size("programs")
    if programs is not None:
        waves = programs / sms
        if programs <= FEW_WAVES * sms:
            return Payoff(PAYS, f"{programs:,} programs a launch ({waves:.1f} waves of {sms} SMs): the launch's "
                          "fixed cost is most of each one, and one merged grid halves it")
        if programs >= MANY_WAVES * sms:
            return Payoff(DOES_NOT_PAY, f"{programs:,} programs a launch ({waves:.0f} waves of {sms} SMs): the "
                          "saved launch is lost in the kernel's own time")
        return Payoff(UNKNOWN, f"{programs:,} programs a launch ({waves:.1f} waves): between {FEW_WAVES} waves "
                      f"(pays) and {MANY_WAVES} (does not); measure it with `skel verify`")
    n, name = wl.largest_elements(k)
    if n is not None:
        if n <= SMALL_ELEMENTS:
            return Payoff(PAYS, f"{name} holds {n:,} elements (≤ {SMALL_ELEMENTS:,}): each launch moves less "
                          "than its own fixed cost, and one merged grid halves that cost")
        if n >= LARGE_ELEMENTS:
            return Payoff(DOES_NOT_PAY, f"{name} holds {n:,} elements (≥ {LARGE_ELEMENTS:,}): each launch runs "
                          "long enough to amortise its start")
        return Payoff(UNKNOWN, f"{name} holds {n:,} elements: between {SMALL_ELEMENTS:,} (pays) and "
                      f"{LARGE_ELEMENTS:,} (does not); measure it with `skel verify`")
    return Payoff(UNKNOWN, f"pays if each launch is small (≤ {FEW_WAVES} waves of programs, or ≤ "
                  f"{SMALL_ELEMENTS:,} elements a tensor)", "--shape programs=N (each launch's grid) or --shape elements=N")


SKELETON = Skeleton(
    id="merged-sibling-launch",
    title="Merge back-to-back launches of one kernel on sibling tensors into one grid",
    summary="Launch the kernel once over q and k (gate and up) with a program-id axis over both: one launch, not two.",
    category=Category.HOST,
    doc=__doc__,
    ruled_out_by=(r"\b(one|single|same)\s+launch\b", r"\bmerg\w*\s+(the\s+)?launch\w*\b",
                  r"\bfus\w*\s+(the\s+)?(q|k|q\s*,\s*k|qk)\s+(and\s+k\s+)?kernels?\b"),
    present=MERGED_AXIS,
    preconditions=[SIBLING_LAUNCHES],
    subject=SIBLING_LAUNCHES,
    env=Env(),
    payoff=small_launches,
    helps=("latency",),
)
