"""Release the GIL in a Python binding whose C++ body blocks (spin-waits, synchronises, sleeps).

## What it does
A host C++ function bound to Python with pybind11 or nanobind runs with the GIL held
unless it gives it up. When the function blocks — spins on a flag the GPU or another process
writes, calls `cudaDeviceSynchronize` / `cudaStreamSynchronize` / a synchronous
`cudaMemcpy`, sleeps, joins a thread — release the GIL for the blocking part: bind it with
`py::call_guard<py::gil_scoped_release>()` (nanobind: `nb::call_guard<nb::gil_scoped_release>()`),
or open a `py::gil_scoped_release release;` (`nb::gil_scoped_release`) scope inside the
function around the wait, after the last use of Python objects.

## Why it is faster
While one thread waits inside C++ holding the GIL, every other Python thread of the process
stops: a KV-cache transfer thread, a scheduler, a logger, a second stream's launcher.
The wait itself does not get shorter; the rest of the program stops being serialised behind
it, so end-to-end latency and throughput of multi-threaded serving improve. Measured here
(benchmarks/results/gil-release-2026-12-01.md, a CPU-only pybind11 demo): a Python thread
made 0.000 of its free-running progress while a bound 300 ms spin-wait or sleep held the
GIL, and 0.53 (spin-wait, which keeps one of two cores busy) to 0.96-1.03 (sleep) once the
binding released it. Releasing costs a few hundred nanoseconds per call (saving and
restoring the thread state), nothing next to a wait.

## Applies when
- the unit is a host function (free function, member function or lambda) bound to Python
  with pybind11 / nanobind (`m.def`, `py::class_<...>.def`);
- its body, or a host function of the same file it calls, blocks: device, stream or event
  synchronisation (`cudaDeviceSynchronize`, `cudaStreamSynchronize`, `cudaEventSynchronize`,
  `.synchronize()`, `torch::cuda::synchronize`), a synchronous copy (`cudaMemcpy`, not
  `cudaMemcpyAsync`) or `.item()` / `.cpu()` on a tensor, a sleep
  (`std::this_thread::sleep_for`), `.join()` / `.wait()` on a thread, future, condition
  variable or barrier, or a CPU spin-wait: a `while` / `do` / `for (;;)` loop that polls
  (an atomic `.load()`, a `volatile` read, `cudaStreamQuery` / `cudaEventQuery`, a pause or
  yield, or a timeout check on `std::chrono::...::now()`);
- it is ranked higher, with the sibling named in the explanation, when another binding of
  the same class (or module) already releases the GIL: the authors know the problem, and
  this entry point was missed. DeepEP's `csrc/deep_ep.cpp` had exactly this from commit
  23ded3b (2025-04) to b720f84 (2026-01): `internode_dispatch` released the GIL around its
  busy-wait on the GPU's receive counters, while `intranode_dispatch`, bound beside it on
  the same `Buffer` class, spun the same way holding it. A sibling's release is a detail that lifts the suggestion, not a
  precondition: a blocking binding that holds the GIL is worth flagging on its own.

## Does not apply when
- the function already releases the GIL: a `gil_scoped_release` in its own `.def` guards
  or in its body (or in a helper it calls), `Py_BEGIN_ALLOW_THREADS`, `PyEval_SaveThread`;
- it does not block: pure launches (`kernel<<<...>>>`, `cudaMemcpyAsync`, `cudaLaunchKernelEx`)
  return at once, and releasing the GIL around them only adds the save/restore cost;
- it is a torch operator registered with `TORCH_LIBRARY` (`m.def("name(Tensor x) -> Tensor")`,
  `m.impl`): `torch.ops` calls run the operator with the GIL already released (PyTorch's
  `invokeOperatorFromPython`);

When applying it: no Python object may be touched while the GIL is released — not even
copied (that changes its reference count). A function that takes or builds `py::object` /
`py::list` / `py::array` values, or calls back into Python, must release only around the
blocking part, in its own `{ py::gil_scoped_release release; ... }` scope, not with a
`call_guard` over the whole call. Code that relies on the GIL as its lock (state shared
with other bound functions) needs a lock of its own first. Detection is syntactic: a blocking call in a function of another file is not seen, and a
release whose scope ends before the wait still counts as present.

## References
- DeepEP `csrc/legacy/buffer.hpp` (`Buffer::internode_dispatch`: `pybind11::gil_scoped_release release;` at the top, with the comment that other Python threads "will get stuck due to GIL unless we release GIL here"; `Buffer::intranode_dispatch`: the same `while (true)` busy-wait on `moe_recv_counter` with a `std::chrono` timeout, no release; both bound on `pybind11::class_<Buffer>`)
- DeepEP commit 23ded3b "Update deep_ep.cpp" (adds `pybind11::gil_scoped_release release;` to `Buffer::internode_dispatch` only)
- pybind11 documentation, "Global Interpreter Lock (GIL)" (`gil_scoped_release`, `gil_scoped_acquire`): https://pybind11.readthedocs.io/en/stable/advanced/misc.html#global-interpreter-lock-gil
- pybind11 documentation, "Call guard" (`py::call_guard<py::gil_scoped_release>()`): https://pybind11.readthedocs.io/en/stable/advanced/functions.html#call-guard
- nanobind documentation, core API (`nb::gil_scoped_release`, `nb::call_guard`): https://nanobind.readthedocs.io/en/latest/api_core.html
- PyTorch `torch/csrc/jit/python/pybind_utils.cpp` (`invokeOperatorFromPython`: `pybind11::gil_scoped_release no_gil_guard;` around the operator)
- skel's own measurement: benchmarks/performance/gil_release.py, tests/test_gil_release.py
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Skeleton
from skel.skeletons.conditions import Condition, Hit, custom

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts

# --- the release ------------------------------------------------------------------------

_RELEASE_NAME = re.compile(r"(^|::)gil_scoped_release$|^Py_BEGIN_ALLOW_THREADS$|^PyEval_SaveThread$")


def _guard_releases(binding: dict) -> bool:
    """A `.def` whose extra arguments release the GIL around the call."""
    return any("gil_scoped_release" in g for g in binding.get("guards") or ())


def _body_releases(binding: dict) -> bool:
    """A sibling `.def` whose bound function releases the GIL in its body. The facts say so
    when the extractor records it per binding (`releases_gil`, or the names the bound
    function mentions); absent either, only the `.def` guards are visible."""
    if binding.get("releases_gil"):
        return True
    return any(_RELEASE_NAME.search(n) for n in binding.get("names") or ())


def _releases(k: KernelFacts) -> list[int] | None:
    """Lines where the unit gives the GIL up: its own `.def` guards, a `gil_scoped_release`
    local (pybind11 or nanobind), `Py_BEGIN_ALLOW_THREADS` or `PyEval_SaveThread`, in its
    body or a helper it calls."""
    lines = [b["line"] for b in k.bindings if b.get("self") and _guard_releases(b)]
    lines += [line for name, line in k.names.items() if _RELEASE_NAME.search(name)]
    lines += [c.line for c in k.calls if _RELEASE_NAME.search(c.name)]
    return lines or None


GIL_RELEASED = custom("gil-released", "the GIL released (`gil_scoped_release` in the `.def` guards or the body, "
                      "`Py_BEGIN_ALLOW_THREADS`)", _releases)

# --- the binding ------------------------------------------------------------------------


def _binding(k: KernelFacts) -> list[int] | bool | None:
    """A binding: its own `.def` lines, or True (no lines) when none is in sight."""
    if k.kind != "binding":
        return None
    own = [b["line"] for b in k.bindings if b.get("self")]
    return own or True


BINDING = custom("python-binding", "a host function bound to Python (pybind11 / nanobind `.def`)", _binding,
                 signature=True)

# torch operators (`TORCH_LIBRARY`): `torch.ops` runs them with the GIL released already
_TORCH_LIBRARY = re.compile(r"^TORCH_LIBRARY(_\w+)?$")


_DISPATCH_KEY = re.compile(r"DispatchKey|\b(torch|c10|at)::k[A-Z]\w*")


def _torch_operator(k: KernelFacts) -> list[int] | None:
    """The unit's own `.def`s when one registers a schema or a dispatch key, else the file's
    `TORCH_LIBRARY` blocks."""
    own = [b for b in k.bindings if b.get("self")]
    # a schema string ("name(Tensor x) -> Tensor") or a dispatch key (`m.impl("name", torch::kCUDA, &fn)`)
    if any("(" in (b.get("python_name") or "") or any(_DISPATCH_KEY.search(g) for g in b.get("guards") or ())
           for b in own):
        return [b["line"] for b in own]
    registered = [line for name, line in k.module_calls.items() if _TORCH_LIBRARY.match(name)]
    return registered or None


TORCH_OPERATOR = custom("torch-operator", "a torch operator registered with `TORCH_LIBRARY` "
                        "(`torch.ops` releases the GIL itself)", _torch_operator)

# --- what blocks ------------------------------------------------------------------------

#: Calls that return only when the device, a stream, an event, a copy or a timer is done.
_BLOCKING = {
    "cudaDeviceSynchronize", "cudaThreadSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
    "cudaMemcpy", "cudaMemcpy2D", "cudaMemcpy3D", "cudaMemcpyPeer", "cudaMemcpyToSymbol", "cudaMemcpyFromSymbol",
    "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize", "cuMemcpy", "cuMemcpyDtoH", "cuMemcpyHtoD",
    "cuMemcpyDtoD", "hipDeviceSynchronize", "hipStreamSynchronize", "hipEventSynchronize", "hipMemcpy",
    "torch::cuda::synchronize", "c10::cuda::device_synchronize", "at::cuda::device_synchronize",
    "std::this_thread::sleep_for", "std::this_thread::sleep_until", "usleep", "sleep", "nanosleep",
    "nvshmem_barrier_all", "MPI_Barrier",
}
#: Method calls that block whatever they are called on (a stream, an event, a thread), or
#: that copy a device tensor to the host.
_BLOCKING_METHODS = {".synchronize", ".join", ".item", ".cpu"}
#: `.wait` blocks on host primitives; on a CUDA event it only orders a stream, so the
#: receiver must look like one: a declared type or a name saying thread/future/condition.
_WAITS = {".wait", ".wait_for", ".wait_until"}
_HOST_WAITABLE = re.compile(r"(?i)thread|future|promise|condition_variable|barrier|latch|semaphore|\bWork\b|"
                            r"^(cv|cond\w*|fut\w*|\w*_cv|\w*_future|\w*barrier|\w*latch|sem\w*|work|done)$")
#: What a spin-wait loop polls: atomics, a volatile read, a stream/event query, a pause or
#: yield, or the clock of a timeout check.
_POLLS = {".load", "std::atomic_load", "std::atomic_load_explicit", "__atomic_load_n", "__atomic_load",
          "cudaStreamQuery", "cudaEventQuery", "cuStreamQuery", "cuEventQuery", "hipStreamQuery",
          "hipEventQuery", "std::this_thread::yield", "sched_yield", "_mm_pause", "__builtin_ia32_pause"}
_IDENT = re.compile(r"[A-Za-z_]\w*")


def _waits_on_host(c, k) -> bool:
    receiver = c.receiver.split("->")[-1].split(".")[-1].strip("*& ()")
    declared = k.var_types.get(receiver, "")
    return bool(_HOST_WAITABLE.search(declared) or _HOST_WAITABLE.search(receiver))


def _blocking_calls(k) -> list:
    out = []
    for c in k.calls:
        if c.name in _BLOCKING or (c.name in _BLOCKING_METHODS and c.receiver):
            out.append(c)
        elif c.name in _WAITS and c.receiver and _waits_on_host(c, k):
            out.append(c)
    return out


def _condition_text(lp) -> str:
    """A loop's condition: the middle of `for (init; cond; update)`, the test of a
    `while` / `do`."""
    args = list(lp.args)
    if lp.kind == "for":
        return args[1].strip() if len(args) > 1 else ""
    return " ".join(a for a in args if a).strip()


def _volatile(name: str, k) -> bool:
    """A variable declared `volatile` (`volatile int* flag = ...`): its declared type says so,
    or the line that declares it (its first mention) does, before the name."""
    if "volatile" in k.var_types.get(name, ""):
        return True
    line = k.names.get(name)
    if line is None or name not in k.var_types or not k.line_start <= line <= k.line_end:
        return False
    text = k.source.splitlines()[line - k.line_start] if k.source else ""
    return bool(re.search(rf"\bvolatile\b[^;=]*\b{re.escape(name)}\b", text))


def _spin_loops(k) -> list[int]:
    """`while` / `do` loops, and `for` loops without a condition, that poll something: a
    CPU busy-wait. A counted `for` loop that loads atomics is a traversal, not a wait."""
    out = []
    for lp in k.loops:
        if lp.kind not in ("while", "do", "for"):
            continue
        cond = _condition_text(lp)
        if lp.kind == "for" and cond:
            continue
        inside = [c for c in k.calls if lp.line <= c.line <= lp.end_line]
        polls = any(c.name in _POLLS or c.name.endswith("::now") for c in inside)
        # a volatile read in the condition, in an `if` inside (`if (*flag) break;`) or in a value read
        read = _IDENT.findall(cond) + [n for i in k.ifs if lp.line <= i["line"] <= lp.end_line for n in i["names"]]
        read += [n for a in k.assigns if lp.line <= a.line <= lp.end_line for n in a.names]
        volatile = "volatile" in cond or any(_volatile(n, k) for n in read)
        if polls or volatile:
            out.append(lp.line)
    return out


_BLOCKS_TEXT = ("a blocking call (device/stream/event synchronisation, synchronous copy, sleep, thread "
                "join/wait) or a CPU spin-wait loop")


def _blocks(k) -> list[Hit] | None:
    """The blocking calls and spin-wait loops, named in the hit so the explanation says
    what holds the GIL (`cudaDeviceSynchronize`, `.join`, a `while` spin-wait)."""
    found = _blocking_calls(k)
    spins = _spin_loops(k)
    if not found and not spins:
        return None
    what = list(dict.fromkeys(f"`{c.name}`" if not c.receiver else f"`{c.receiver}{c.name}`" for c in found))[:3]
    what += [f"a spin-wait loop{'s' if len(spins) > 1 else ''}"] if spins else []
    lines = tuple(sorted({c.line for c in found} | set(spins)))
    return [Hit("blocks-holding-gil", f"blocks while holding the GIL: {', '.join(what)}", lines)]


BLOCKS = Condition("blocks-holding-gil", _BLOCKS_TEXT, _blocks)

# --- the sibling that releases (raises the rank, never fails) ---------------------------


def _sibling_releases(k) -> list[Hit]:
    """Always holds. When another binding of the same class or module releases the GIL, a
    hit naming it (with its `.def` line): the authors know the problem and missed this entry
    point, so the suggestion is more specific and ranks higher."""
    found = [b for b in k.bindings if not b.get("self") and (_guard_releases(b) or _body_releases(b))]
    if not found:
        return []
    names = ", ".join(f"`{b.get('python_name') or b.get('function')}`" for b in found[:3])
    owner = found[0].get("owner") or "module"
    where = "module" if owner == "module" else f"class `{owner}`"
    return [Hit("sibling-releases-gil", f"a sibling binding of the same {where} releases the GIL: {names}",
                tuple(sorted(b["line"] for b in found))[:4])]


SIBLING_RELEASES = Condition("sibling-releases-gil", "a sibling binding of the same class releases the GIL "
                             "(named when one does; never fails)", _sibling_releases)

SKELETON = Skeleton(
    id="gil-release-blocking-binding",
    title="Release the GIL around a blocking C++ call in a Python binding",
    summary="A pybind11/nanobind function that spin-waits or synchronises must release the GIL (gil_scoped_release).",
    category=Category.HOST,
    doc=__doc__,
    languages=("cuda",),
    ruled_out_by=(r"\bGIL\b", r"gil_scoped_release", r"interpreter lock"),
    present=GIL_RELEASED,
    preconditions=[BINDING, BLOCKS, ~TORCH_OPERATOR, SIBLING_RELEASES],
    subject=BINDING,
    helps=("latency",),
)
