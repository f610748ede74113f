"""Build a kernel's launch metadata on the device, not by reading tensors back to the host.

## What it does
A varlen or paged kernel reads per-program metadata by its program id: a sequence's start
offset (`cu_seqlens`, `start_loc`), a block id from a block table, a chunk's (sequence,
chunk) pair, a window's length. The before builds that table on the host: it reads a device
tensor back (`lens.tolist()`, `x.sum().item()`, `history.cpu()`), walks it in a Python loop
(a running sum, a slice per sequence, `torch.arange(n)` per length) and uploads the result
(`torch.tensor(starts, device=...)`, `torch.cat(pieces)`) before the launch. The after
computes the same table with device operations that never leave the stream
(`torch.cumsum(lens, 0) - lens`, `torch.minimum(lens, window)`), with a tiny Triton kernel
(one program per 32 sequences), or inside the kernel itself (each program derives its block
ids from `q_start_loc`, `q_seqlens`, `kv_seqlens` it loads), with the grid sized by a bound
the host already knows (`max_q_seq_length`, the batch size) and the extra programs exiting.

## Why it is faster
`.tolist()`, `.item()` and `.cpu()` on a device tensor wait for every kernel queued before
them to finish, copy the values over PCIe and only then let Python go on: the GPU drains its
queue and idles while the host runs the loop, builds a list and copies it back (a
host-to-device copy of pageable memory, itself synchronous). That costs about 10-50 µs a
call whatever the batch, more with a Python loop over hundreds of sequences, and it breaks
the host's lead over the GPU, so the launches after it no longer overlap the kernels before
it. A launcher with such a round trip cannot be captured in a CUDA graph either. Device
operations on the same tiny arrays take a few microseconds of GPU time, queued behind the
previous kernel. It pays where the kernel is short next to the stall — a decode step, a
serving engine's per-step attention metadata, a varlen kernel over short sequences; a
kernel that streams gigabytes hides it (a 20 µs stall is 2 % of 1 ms).

## Applies when
- the kernel reads per-program metadata: a scalar `tl.load` from a table parameter at an
  index made from a program id (`tl.load(cu_seqlens + i_n)`, `tl.load(block_table + pid * stride
  + j)`), whose value feeds another load's or store's address;
- a launch of it in its own file, in a function that reads a device tensor back to the host
  (`.tolist()`, `.item()`, `.cpu()`, `.numpy()`) and then builds a tensor for the device from
  the values (`torch.tensor`, `torch.as_tensor`, `torch.from_numpy`, `.cuda()`, `torch.cat` /
  `torch.stack` of pieces) before the launch: a device → host → device round trip of metadata;
- it pays when the launch runs every step of a loop: in a serving engine's module (every
  decode step) it pays; elsewhere when the kernel moves at most ~330 MB (≤ 100 µs at HBM
  bandwidth, where a 10-50 µs stall is a fifth of the step or more).

## Does not apply when
- the host reads a value back only to size an allocation or the grid (`total =
  cu_seqlens[-1].item()` then `torch.empty(total, D)`) and uploads nothing: the size must reach
  the host, and a device-side table would not remove that sync (bound the size instead);
- the metadata comes from host data to begin with (a Python list of lengths the scheduler
  holds, `torch.tensor(lens_list, device=...)`): nothing is read back, the upload is the cheapest
  way in (pin it and copy asynchronously if it shows);
- the table is already built on the device (`torch.cumsum`, a Triton kernel) — the technique;
- the kernel reads no per-program table (a scale read back with `.item()` and uploaded as a
  scalar tensor): that is a sync for a value, not launch metadata;
- the only read-back is after the launch (`loss.item()` returned to the caller);
- the kernel streams gigabytes per launch (≥ 1 ms at HBM bandwidth, a long prefill outside a
  serving engine): the stall is a few percent of it (the payoff says so from `--shape elements=N`).

## References
- ModelTC/lightllm `lightllm/models/mistral/infer_struct.py` and
  `lightllm/models/mistral/triton_kernel/init_att_sliding_window_info.py`
  (`_fwd_kernel_init_att_window_info`: a per-sequence Python loop over `b_seq_len[i]` that
  filled the sliding-window lengths and start locations element by element becomes a one-warp
  Triton kernel plus `torch.cumsum(b_att_seq_len, 0) - b_att_seq_len`) — at `0bf7ec9f24`,
  2024-06-12, "use triton to init window info (#420)", before 2025-07-01
- InternLM/lmdeploy `lmdeploy/pytorch/kernels/fill_kv_cache.py` (`_fill_kv_cache_kernel`:
  `_prefilling_cache_info` read `seq_length.sum().item()` and `history_lengths.cpu()` and sliced
  a block list per sequence in Python; the new kernel loads `QStartLoc`, `QSeqLens`,
  `KVSeqLens` and its block offset by program id, on a `[batch_size, max_num_blocks]` grid) —
  at `1fcd6d36f9`, 2024-03-11, "optimize filling kv cache kernel in pytorch engine (#1251)",
  before 2025-07-01
- fla-org/flash-linear-attention `fla/ops/common/utils.py` (`prepare_position_ids_kernel`:
  position ids of packed sequences from `offsets` on the device, where `prepare_position_ids`
  built `torch.arange(n)` for each `n` in `prepare_lens(offsets).tolist()`) — at `c805d79a07`,
  2025-03-18, "[Misc.] Add simple kernel for preparing offsets", before 2025-07-01
- fla-org/flash-linear-attention `fla/ops/simple_gla/parallel.py` (`parallel_simple_gla_fwd`: the
  launcher no longer rebuilds the varlen chunk indices from `...tolist()` on every call; the caller
  passes `indices` made once) — at `c882adb3d2`, 2025-03-22, "[Ops] Adjusted hyparams & Delete
  indices recomputation", before 2025-07-01
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.kernels.flow import flow_of, has_call, names_in
from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN, Category, Env, Payoff, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.patterns import launches
from skel.skeletons.predicates.addresses import is_block_ptr_address
from skel.skeletons.predicates.workload import serving_engine

if TYPE_CHECKING:
    from skel.kernels.flow import Flow, Node
    from skel.kernels.model import KernelFacts, Launch
    from skel.skeletons.base import Workload

#: a call that reads a device tensor back to the host, as recorded (`lens.tolist`, `x.cpu`)
_SYNC_CALL = re.compile(r"\.(tolist|item|cpu|numpy)$")
#: the same read-backs chained on a call's result (`lens.diff().tolist()`, `x.sum().item()`):
#: the extractor keeps no call for them, only the attribute's name among the function's names
_SYNC_NAMES = frozenset({"tolist", "item", "cpu"})
#: a tensor built for the device from host values, or pieced together from slices indexed by them
_REBUILD = re.compile(r"^torch\.(tensor|as_tensor|from_numpy|LongTensor|IntTensor|cat|stack)$|\.cuda$")
#: device operations that build offsets, lengths and indices without leaving the stream
_DEVICE_METADATA = re.compile(r"(^|\.)(cumsum|diff|searchsorted|bucketize|repeat_interleave)$")

#: GPU time per launch at which a 10-50 µs stall is a fifth of the step or more (µs)
PAYS_BELOW_US = 100
#: GPU time per launch past which the stall is a couple of percent (µs)
HIDDEN_ABOVE_US = 1000
#: HBM bandwidth of an H100 SXM (bytes per µs): the kernel's time from the bytes it moves
HBM_BYTES_PER_US = 3.35e6
#: bytes an element of the largest tensor is taken to hold (bf16/fp16, the common case)
ELEMENT_BYTES = 2


def _round_trip(ln: Launch) -> bool:
    """The launching function reads a device tensor back (a recorded `.tolist()` / `.item()` /
    `.cpu()` / `.numpy()` before a tensor is built for the device, or one chained on a call's
    result, which leaves only its name, with no recorded read-back after the launch) and builds
    a tensor for the device before the launch."""
    seq = ln.calls_before
    rebuilds = [i for i, c in enumerate(seq) if _REBUILD.search(c)]
    if not rebuilds:
        return False
    syncs = [i for i, c in enumerate(seq) if _SYNC_CALL.search(c)]
    if syncs:
        return min(syncs) < max(rebuilds)
    if any(_SYNC_CALL.search(c) for c in ln.calls_after):
        return False  # the read-back the names show is the one after the launch
    return bool(_SYNC_NAMES & set(ln.host_names))


def _host_round_trip(ln: Launch, k: KernelFacts) -> bool:
    return ln.kernel == k.name and _round_trip(ln)


def _built_on_device(ln: Launch, k: KernelFacts) -> bool:
    """This kernel's launch, no read-back in its function, and its metadata made by device
    operations before it (`torch.cumsum(lens, 0) - lens`, `torch.searchsorted(cu_seqlens, ...)`)."""
    if ln.kernel != k.name or _round_trip(ln) or any(_SYNC_CALL.search(c) for c in ln.calls_before):
        return False
    return any(_DEVICE_METADATA.search(c) for c in ln.calls_before)


def _scalar_pid_index(fl: Flow, addr: Node, k: KernelFacts) -> bool:
    """A scalar address: a parameter plus an index made from a program id, no `tl.arange`
    (a table entry for this program), not a block pointer."""
    names, exprs = fl.closure(addr)
    if not has_call(exprs, "tl.program_id") or has_call(exprs, "tl.arange", "tl.make_block_ptr"):
        return False
    if is_block_ptr_address(fl, addr):
        return False
    params = {p.name for p in k.params if not p.constexpr}
    return bool((names | names_in(addr)) & params)


def _metadata_loads(k: KernelFacts) -> list[int] | None:
    """Lines of scalar loads of a table entry at a program-id index whose value feeds
    another load's or store's address (an offset, a length bound, a block id)."""
    fl = flow_of(k)
    if not fl.ok:
        return None
    out: list[int] = []
    accesses = [c for c in fl.calls if c.name in ("tl.load", "tl.store") or c.name.startswith("tl.atomic_")]
    for c in fl.loads():
        addr = c.arg(0, "pointer")
        if addr is None or not c.targets or not _scalar_pid_index(fl, addr, k):
            continue
        for other in accesses:
            if other is c:
                continue
            # its address, its mask, or the bounds of a loop around it
            used = [x for x in (other.arg(0, "pointer"), other.arg(1 if other.name == "tl.load" else 2, "mask")) if x is not None]
            used += [lp.bounds for lp in other.loops if lp.bounds is not None]
            if any(set(c.targets) & (fl.closure(x)[0] | names_in(x)) for x in used):
                out.append(c.line)
                break
    return sorted(set(out)) or None


#: the subject: a device -> host -> device round trip of launch metadata
HOST_ROUND_TRIP = launches(
    own=True, where=_host_round_trip, name="host-built-launch-metadata",
    describe="a launch whose function reads a device tensor back (`.tolist()`, `.item()`, `.cpu()`) and "
             "builds a tensor for the device from it before the launch (a sync per call)")
#: the kernel reads per-program metadata
PER_PROGRAM_METADATA = custom(
    "per-program-metadata",
    "a scalar load of a table entry at a program-id index (an offset, a length, a block id) that feeds "
    "another address", _metadata_loads)
#: the technique is already used: the per-program table is built by device operations before the launch
PRESENT = PER_PROGRAM_METADATA & launches(
    own=True, where=_built_on_device, name="metadata-built-on-device",
    describe="launch metadata built by device operations (`torch.cumsum`, `torch.searchsorted`...) with no "
             "read-back in the launching function")


def stall_vs_kernel(k: KernelFacts, wl: Workload) -> Payoff:
    """A read-back stalls the GPU for about 10-50 µs a call: it pays in a serving engine (a
    launch every decode step) and where the kernel moves at most ~330 MB (≤ 100 µs at HBM
    bandwidth); past ~3.3 GB (≥ 1 ms) the stall is a couple of percent."""
    engine = serving_engine(k)
    if engine:
        return Payoff(PAYS, f"a {engine} module launches it every engine step: each launch waits for the GPU "
                      "to drain (10-50 µs) and cannot be captured in a CUDA graph")
    elements, name = wl.largest_elements(k)
    if elements is None:
        return Payoff(UNKNOWN, "pays if the launch runs every step of a loop and its kernel is short (≤ "
                      f"{PAYS_BELOW_US} µs at HBM bandwidth) next to the 10-50 µs stall",
                      "--shape elements=N")
    us = elements * ELEMENT_BYTES / HBM_BYTES_PER_US
    if us <= PAYS_BELOW_US:
        return Payoff(PAYS, f"{name} holds {elements:,} elements: ~{us:,.0f} µs of HBM traffic, so a 10-50 µs "
                      "stall per launch is a fifth of the step or more")
    if us >= HIDDEN_ABOVE_US:
        return Payoff(DOES_NOT_PAY, f"{name} holds {elements:,} elements: ~{us:,.0f} µs of HBM traffic hides "
                      "a 10-50 µs stall (a few percent)")
    return Payoff(UNKNOWN, f"{name} holds {elements:,} elements (~{us:,.0f} µs at HBM bandwidth): between "
                  f"{PAYS_BELOW_US} and {HIDDEN_ABOVE_US} µs; measure it with `skel verify`")


SKELETON = Skeleton(
    id="device-side-metadata",
    title="Launch metadata built on the device: no .tolist()/.item() round trip before the launch",
    summary="Compute offsets, lengths and block ids with device ops or a tiny kernel instead of a host sync.",
    category=Category.HOST,
    doc=__doc__,
    present=PRESENT,
    preconditions=[HOST_ROUND_TRIP, PER_PROGRAM_METADATA],
    subject=HOST_ROUND_TRIP,
    env=Env(),
    payoff=stall_vs_kernel,
    helps=("latency",),
)
