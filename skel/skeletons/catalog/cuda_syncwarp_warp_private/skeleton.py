"""`__syncwarp()`, not `__syncthreads()`, where a loop's barrier orders only each warp's own slice of shared memory.

## What it does
A loop in which every warp stages data through its *own* slice of a `__shared__` buffer — a
tile indexed first by the warp id (`tile[warp][r][lane]`), a flat scratch at `warp * 32 + lane`,
a pointer taken once into the warp's part (`half* stage = smem + warp * 256`) — and waits for
it with a block barrier, gets a warp barrier instead:

    for (base = blockIdx.x * W; base < n; base += gridDim.x * W) {    for (t = blockIdx.x * W + warp; t < n; t += gridDim.x * W) {
      tile[warp][r][lane] = x[...];                                    tile[warp][r][lane] = x[...];
      __syncthreads();                                          →       __syncwarp();
      y[...] = tile[warp][lane][r];                                    y[...] = tile[warp][lane][r];
      __syncthreads();                                                 __syncwarp();
    }                                                                }

The write and the read of a slice are done by the same 32 lanes, so the only ordering needed is
among those lanes: `__syncwarp()` (which, unlike relying on lock-step execution, is also a memory
fence among the warp's lanes on Volta and later). Where every exchange goes through registers
(`__shfl_xor_sync`), no barrier at all. The loop no longer has to be uniform over the block (a
`__syncthreads()` under a per-warp trip count is undefined behaviour), so each warp can run its
own trip count. A barrier the loop's last trip provided for a cross-warp read *after* the loop
(warp 0 combining the slices) becomes one `__syncthreads()` after the loop.

The history shows this family of changes on barriers that order no traffic between warps:
bitsandbytes let every warp but the last return before a wmma tail and dropped the block
barriers around the one warp's tile; flashinfer gave each `(warp, fx, fy)` of its output
exchange its own slot, so the two barriers per trip of that loop became one before it;
exllamav2 commented out a second barrier with no shared-memory write since the first.

## Why it is faster
A `__syncthreads()` holds every warp of the block until the slowest one arrives: inside a loop,
W warps advance in lock-step, each trip as slow as its slowest warp (a longer row, a load that
missed L2, a warp the scheduler issued late), and a warp that has finished its loads cannot start
the next trip's loads while another is still waiting for its own. With `__syncwarp()` the warps
drift apart: one waits on memory while another computes, which is how an SM hides latency. The
barrier instruction itself (`BAR.SYNC`) also costs more than a warp sync. It pays in a hot loop
with several warps per block; a barrier executed once per block, or a block of one warp (where
`__syncthreads()` already waits for 32 lanes only), has nothing to win.

## Applies when
- a `__syncthreads()` sits inside a loop of a `__global__` kernel, and every access to shared
  memory inside that loop goes to the accessing warp's own slice: a `__shared__` array whose
  first subscript is the warp id (a name set from `threadIdx.x / 32`, `threadIdx.x >> 5`,
  `threadIdx.x / warpSize` or a `get_warp_idx()` helper), a flat index `warp * S + ...` with no
  other thread-dependent term than the lane, or a pointer into shared memory offset by the warp id;
- **it pays** when the block has several warps: the warp-indexed dimension of the slice (`tile[8]`),
  `__launch_bounds__(256)`, or `--shape NAME=N` for a named warp count says how many; a block of
  one warp does not pay, a warp count not known from the source is *conditional*.

## Does not apply when
- a warp reads another warp's slice in the loop (`partial[w]` over all warps, `buf[warp ^ 1]`), or
  the buffer is a block-wide tile (`sA[ty][tx]` of a tiled GEMM): the barrier orders traffic
  between warps;
- shared memory is touched through something the kernel cannot see into: the whole buffer handed to a
  helper (`block_copy_async(&buf[0][0], ...)`), `cp.async`/TMA copies whose writers are other threads;
- the barrier is outside any loop: it runs once per block;
- the kernel already synchronises the slice with `__syncwarp()`.

## References
- bitsandbytes `csrc/kernels.cu` (`gemm_device`: after the main loop every warp but `WARPS-1` returns,
  and the block barriers around the last warp's wmma tile — `store_matrix_sync` into shared memory and
  the zeroing of `smem_C` — are removed) — at `77f15fdce9`, 2023-05-02, "Shared memory efficient
  240.", before 2025-07-01
- flashinfer `include/flashinfer/attention/prefill.cuh` (`threadblock_sync_mdo_states`: the `o_frag`
  exchange wrote one slot per warp and read it back with a `__syncthreads()` before and after, inside
  the `fx`/`fy` loop; each `(warp, fx, fy)` gets its own slot, all are written first, and the barriers
  leave the loop) — at `e56ddadf4b`, 2024-07-04, "perf: accelerate gqa performance (#356)", before
  2025-07-01
- exllamav2 `exllamav2/exllamav2_ext/cuda/q_gemm_kernel_gptq.cuh` (`gemm_half_q_half_gptq_kernel`: a
  second `__syncthreads()` after register-only scale/zero preparation, no shared write since the
  first, commented out) — at `f79e16c5d0`, 2023-09-07, "Optimization, wider loads in EXL2 kernel
  (int4)", before 2025-07-01
- flashinfer `include/flashinfer/attention/persistent_template.cuh` (`PersistentKernelTemplate`: the
  barrier between the two persistent runners removed) — at `fa519c0ca3`, 2025-06-16, "misc: remove sync
  between persistent runners and use packed_causal_kv_end for SM90Plan (#1146)", before 2025-07-01
- the candidate clusters "fewer call __syncthreads" (4 repositories, 8 commits, also ThunderKittens
  `h100_bwd_ideal.cu` at `56b340afb9`, which moved a scaling of `q_smem[warpgroupid]` into registers
  and dropped its barrier) and "- call __syncthreads" (4 repositories, 5 commits)
- CUDA C++ Programming Guide, "Synchronization Functions" (`__syncthreads()` in conditional code;
  `__syncwarp()` and its memory ordering among the participating threads)
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN, Category, Env, Payoff, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.predicates.cuda import code, line_of, shared_arrays, sync_lines
from skel.skeletons.predicates.cuda_tiles import is_kernel

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts, Loop
    from skel.skeletons.base import Workload

#: a warp id computed from the thread index: `threadIdx.x / 32`, `>> 5`, `/ warpSize`, `/ WARP_SIZE`
_WARP_VALUE = re.compile(r"\(?\s*threadIdx\.x\s*\)?\s*(?:/\s*(?:32\b|warpSize\b|\w*WARP_SIZE\b|k?[Ww]arp_?[Ss]ize\b)|>>\s*5\b)")
#: a warp id from a helper (flashinfer's `get_warp_idx<...>()`, `warp_id()`)
_WARP_CALL = re.compile(r"(?i)(?:\w+::)*(?:get_)?warp_?id(?:x)?\s*(?:<[^<>]*>)?\s*\(\s*\)")
#: a lane id: `threadIdx.x % 32`, `& 31`, `% warpSize`
_LANE_VALUE = re.compile(r"\(?\s*threadIdx\.x\s*\)?\s*(?:%\s*(?:32\b|warpSize\b|\w*WARP_SIZE\b|k?[Ww]arp_?[Ss]ize\b)|&\s*31\b)")
_THREAD_WORD = re.compile(r"\b(?:threadIdx|tid|tidx|thread_id|ty|tx)\b")
_WORD = re.compile(r"[A-Za-z_]\w*")


def _bare(value: str) -> str:
    """The value without casts, a warp-uniform broadcast (`__shfl_sync(mask, v, 0)`) and outer parentheses."""
    v = re.sub(r"\b(?:static_cast\s*<[^<>]*>|\(\s*(?:const\s+)?(?:unsigned\s+)?\w+\s*\))", "", value).strip()
    m = re.fullmatch(r"__shfl_sync\s*\(\s*[^,]+,\s*(.+),\s*0\s*\)", v)
    v = m.group(1).strip() if m else v
    while v.startswith("(") and v.endswith(")"):
        v = v[1:-1].strip()
    return v


def _named(k: KernelFacts, value: re.Pattern[str]) -> set[str]:
    """Names assigned exactly a warp id (a lane id): `threadIdx.x / 32`, not `(threadIdx.x % 32) / 4`."""
    return {a.targets[0] for a in k.assigns
            if len(a.targets) == 1 and _WORD.fullmatch(a.targets[0]) and value.fullmatch(_bare(a.value))}


def _warp_names(k: KernelFacts) -> set[str]:
    return _named(k, _WARP_VALUE) | _named(k, _WARP_CALL)


def _lane_names(k: KernelFacts) -> set[str]:
    return _named(k, _LANE_VALUE)


def _top_terms(expr: str) -> list[str]:
    """The `+`-separated terms of an index at parenthesis depth 0."""
    terms, depth, cur = [], 0, ""
    for ch in expr:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "+" and depth == 0:
            terms.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return [t for t in [*terms, cur.strip()] if t]


def _warp_offset(expr: str, warps: set[str], lanes: set[str]) -> bool:
    """An index into the warp's own slice: the warp id alone (`warp`), or `warp * S + rest` with no
    thread-dependent name in `rest` but the lane."""
    expr = expr.strip()
    if expr in warps:
        return True
    terms = _top_terms(expr)
    head = [t for t in terms if set(_WORD.findall(t)) & warps]
    if len(head) != 1 or not re.fullmatch(rf"\(?\s*(?:{'|'.join(map(re.escape, sorted(warps)))})\s*\)?\s*\*.+",
                                          head[0]):
        return False
    rest = " ".join(t for t in terms if t is not head[0])
    return not (set(_WORD.findall(rest)) - lanes) & ({"threadIdx"} | warps) and not _THREAD_WORD.search(rest)


@dataclass(frozen=True)
class _Barrier:
    line: int
    loop: Loop
    arrays: tuple[str, ...]  # the shared arrays (or pointers) whose warp slices the loop touches


def _private_pointers(k: KernelFacts, shared: set[str], warps: set[str], lanes: set[str]) -> set[str]:
    """Pointers into a warp's slice: `T* p = smem + warp * S`, `&buf[warp][0]`, `buf[warp]`."""
    out = set()
    for a in k.assigns:
        if len(a.targets) != 1 or a.targets[0] not in shared:
            continue
        v = a.value.strip()
        m = re.fullmatch(r"(?:\([^()]*\*\s*\)\s*)?&?\s*([A-Za-z_]\w*)\s*\[([^\[\]]*)\].*", v)
        if m and m.group(1) in shared and _warp_offset(m.group(2), warps, lanes):
            out.add(a.targets[0])
            continue
        v = re.sub(r"^(?:reinterpret_cast\s*<[^>]*>\s*)?\(?", "", v).rstrip(")")
        m = re.fullmatch(r"\(?\s*([A-Za-z_]\w*)\s*\)?\s*\+\s*(.+)", v)
        if m and m.group(1) in shared and _warp_offset(m.group(2), warps, lanes):
            out.add(a.targets[0])
    return out


def _shared_names(k: KernelFacts) -> set[str]:
    """`__shared__` arrays and the pointers declared into them (`half* stage = smem + warp * 256`); an
    element store `dst[i] = tile[..]` is no pointer declaration."""
    text = code(k)
    names = {n for n in shared_arrays(k) if re.search(rf"__shared__[^;]*\b{re.escape(n)}\b", text)}
    for _ in range(2):
        for a in k.assigns:
            if len(a.targets) == 1 and _WORD.fullmatch(a.targets[0]) and set(a.names) & names \
                    and a.targets[0] in shared_arrays(k):
                names.add(a.targets[0])
    return names


def _innermost(k: KernelFacts, line: int) -> Loop | None:
    around = [lp for lp in k.loops if lp.line <= line <= lp.end_line]
    return max(around, key=lambda lp: lp.line) if around else None


def _private_loops(k: KernelFacts, barrier: str) -> list[_Barrier]:
    """Each `barrier` call in a loop whose every shared-memory touch is the warp's own slice."""
    if not is_kernel(k):
        return []
    shared = _shared_names(k)
    warps = _warp_names(k)
    if not shared or not warps:
        return []
    lanes = _lane_names(k)
    pointers = _private_pointers(k, shared, warps, lanes)
    lines = sync_lines(k) if barrier == "__syncthreads" else [c.line for c in k.calls if c.name == barrier]
    text = code(k)
    names = re.compile(rf"\b(?:{'|'.join(map(re.escape, sorted(shared)))})\b")
    out = []
    for ln in lines:
        lp = _innermost(k, ln)
        if lp is None:
            continue
        touched: list[str] = []
        ok = True
        for m in names.finditer(text):
            at = line_of(k, text, m.start())
            if not lp.line <= at <= lp.end_line:
                continue
            name = m.group(0)
            if name in pointers:
                touched.append(name)
                continue
            sub = re.match(r"\s*\[([^\[\]]*)\]", text[m.end():])
            if sub and _warp_offset(sub.group(1), warps, lanes):
                touched.append(name)
                continue
            ok = False
            break
        if ok and touched:
            out.append(_Barrier(ln, lp, tuple(dict.fromkeys(touched))))
    return out


def _block_barrier_lines(k: KernelFacts) -> list[int]:
    return [b.line for b in _private_loops(k, "__syncthreads")]


def _warp_barrier_lines(k: KernelFacts) -> list[int]:
    return [b.line for b in _private_loops(k, "__syncwarp")]


SUBJECT = custom(
    "block-barrier-on-warp-slice",
    "a `__syncthreads()` inside a loop where every shared-memory access is to the accessing warp's own slice "
    "(`tile[warp][..]`, `red[warp * 32 + lane]`, a pointer `smem + warp * S`)",
    _block_barrier_lines)
#: present: the loop's warp slices are ordered with `__syncwarp()`
PRESENT = custom(
    "warp-barrier-on-warp-slice",
    "`__syncwarp()` inside a loop ordering only warp-private shared-memory slices",
    _warp_barrier_lines)


def _eval(expr: str, sizes: dict[str, int]) -> int | None:
    """An integer expression of literals, `*`, `+`, `-`, `/` and names the sizes give (None otherwise)."""
    try:
        node = ast.parse(expr.strip(), mode="eval").body
    except SyntaxError:
        return None

    def ev(n: ast.AST) -> int | None:
        if isinstance(n, ast.Constant) and isinstance(n.value, int):
            return n.value
        if isinstance(n, ast.Name):
            return sizes.get(n.id)
        if isinstance(n, ast.BinOp):
            a, b = ev(n.left), ev(n.right)
            if a is None or b is None:
                return None
            if isinstance(n.op, ast.Mult):
                return a * b
            if isinstance(n.op, ast.Add):
                return a + b
            if isinstance(n.op, ast.Sub):
                return a - b
            if isinstance(n.op, (ast.Div, ast.FloorDiv)) and b:
                return a // b
        return None

    return ev(node)


def _decl_first_dim(k: KernelFacts, name: str) -> str | None:
    m = re.search(rf"__shared__[^;]*?\b{re.escape(name)}\s*\[([^\]]*)\]", code(k))
    return m.group(1).strip() if m else None


def _warp_count(k: KernelFacts, b: _Barrier, sizes: dict[str, int]) -> tuple[int | None, str, list[str]]:
    """Warps per block, where it comes from, and the names that would decide it."""
    for d in k.decorators:
        if d.name == "__launch_bounds__" and d.list_items:
            threads = _eval(d.list_items[0], sizes)
            if threads is not None:
                return -(-threads // 32), f"`__launch_bounds__({d.list_items[0]})`", []
    text = code(k)
    needs: list[str] = []
    warps = _warp_names(k)
    for name in b.arrays:
        dim = _decl_first_dim(k, name)
        if dim is None:
            continue
        # `tile[warp][..]`: the first dimension is the warp count
        alt = "|".join(map(re.escape, sorted(warps)))
        if re.search(rf"\b{re.escape(name)}\s*\[\s*(?:{alt})\s*\]", text):
            n = _eval(dim, sizes)
            if n is not None:
                return n, f"`{name}[{dim}]`, one slice per warp", []
            needs += [w for w in _WORD.findall(dim) if w not in sizes]
            continue
        # `red[warp * S + lane]`: the array's size over the slice's stride
        m = re.search(rf"\b{re.escape(name)}\s*\[\s*\(?\s*(?:{alt})\s*\)?\s*\*\s*([\w\s*()]+?)\s*(?:\+|\])", text)
        if m:
            total, stride = _eval(dim, sizes), _eval(m.group(1), sizes)
            if total is not None and stride:
                return total // stride, f"`{name}[{dim}]` in slices of `{m.group(1).strip()}`", []
            needs += [w for w in _WORD.findall(f"{dim} {m.group(1)}") if w not in sizes]
    return None, "", needs


def _payoff(k: KernelFacts, wl: Workload) -> Payoff:
    barriers = _private_loops(k, "__syncthreads")
    if not barriers:
        return Payoff(UNKNOWN, "no block barrier inside a loop ordering only warp-private shared memory")
    b = barriers[0]
    where = (f"the `__syncthreads()` at line {b.line} (loop at line {b.loop.line}) orders only each warp's own "
             f"slice of `{'`, `'.join(b.arrays)}`")
    n, source, needs = _warp_count(k, b, dict(wl.sizes))
    if n is None:
        return Payoff(UNKNOWN, f"{where}; it pays when the block has several warps, which the source does not say",
                      " ".join(f"--shape {w}=N" for w in dict.fromkeys(needs)))
    if n <= 1:
        return Payoff(DOES_NOT_PAY, f"{where}, but the block is one warp ({source}): `__syncthreads()` already waits "
                      "for those 32 lanes only")
    return Payoff(PAYS, f"{where}: with {n} warps per block ({source}) every trip holds all {n} until the slowest "
                  "arrives; `__syncwarp()` lets each warp run ahead and overlap its loads with the others' work")


SKELETON = Skeleton(
    id="cuda-syncwarp-warp-private",
    title="__syncwarp() for a loop barrier that orders only each warp's own shared-memory slice",
    summary="A __syncthreads() in a loop that guards only warp-private shared slices becomes __syncwarp().",
    category=Category.TUNING,
    doc=__doc__,
    ruled_out_by=(r"\b__syncwarp\b",),
    present=PRESENT,
    preconditions=[SUBJECT],
    subject=SUBJECT,
    env=Env(backends=("cuda",)),
    helps=("latency",),
    languages=("cuda",),
    payoff=_payoff,
)
