"""Stage 1, applied? — is the candidate a real change, before anything is run for results.

Three checks, the first that decides stops:

1. the candidate parses (libcst, the same extraction the catalog uses): if not, "not-applied";
2. with a skeleton, its technique is detected present in some candidate kernel: if not,
   "not-applied" (the change is not the one claimed);
3. the candidate does not compile to the same machine code as the original: if every kernel
   it launches has the same SASS (PTX when SASS is unavailable) as the original's, kernel names
   and debug info stripped, and the launches and grids are the same, it is a "no-op".

Machine code is read from the kernels actually launched: each Triton ``JITFunction.run`` is
wrapped for the duration of one launcher call and the ``CompiledKernel`` it returns is kept.
On a GPU the launcher runs (twice: the first call may autotune, the second is recorded) on
inputs of the harness's first GPU shape, and SASS is compared. Without a GPU the same happens
in a child process with the interpreter off and :func:`skel.kernels.offline.offline_cuda`
standing in for the driver: launches become warm-ups (compile only, for sm_90), autotuned
kernels compile every config, and PTX is compared (SASS works offline too, through Triton's
bundled ptxas and nvdisasm, but costs ~2 s a kernel; equal PTX gives equal SASS, and unequal
PTX only ever sends a candidate on to be timed). The CPU run uses the first CPU shape.

A launch-side change (MEASURE other than "kernel") can leave machine code identical on
purpose (grids, configs, specialisation); there identical code is only a note.

KernelBench: the candidate's ``ModelNew`` is compared with ORIGINAL's own ``ModelNew`` where
ORIGINAL has one (the Triton version being improved), else with ``Model``; both are called
on ``get_inputs()`` (on the CPU in the offline child, for sm_90). A PyTorch-only ``Model``
launches no Triton kernel: then nothing is compared, and the note says so (the candidate's
kernels are still compiled, so a kernel that does not compile for the GPU shows here).
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import os
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from skel.kernels.model import ParseError
from skel.kernels.offline import normalise, offline_cuda
from skel.skeletons import registry
from skel.verifier.correctness import dtype_of
from skel.verifier.harness import Harness, import_file

_CHILD_TIMEOUT_S = 240


@dataclass
class AppliedResult:
    verdict: str | None  # "not-applied" | "no-op" | None (continue to the next stage)
    detail: str = ""
    notes: list[str] = field(default_factory=list)


@dataclass
class LaunchCode:
    """One kernel launch: the kernel's name, its normalised machine code, and the launch shape."""

    name: str
    kind: str  # "sass" | "ptx"
    code: str
    grid: str  # repr of a tuple grid, "callable" for a lambda, "" when not launched (offline)
    num_warps: int | None = None

    @property
    def digest(self) -> str:
        return hashlib.sha1(self.code.encode()).hexdigest()[:16]


# ---- machine code --------------------------------------------------------------------------

def code_of(kernel: Any, prefer: str = "sass") -> tuple[str, str]:
    """(kind, text) of a CompiledKernel: SASS where nvdisasm gives it (and is preferred), else PTX."""
    asm = kernel.asm
    if prefer == "ptx" and "ptx" in asm:
        return "ptx", asm["ptx"]
    with contextlib.suppress(Exception):
        sass = asm["sass"]
        if sass and sass.strip():
            return "sass", sass
    if "ptx" in asm:
        return "ptx", asm["ptx"]
    raise RuntimeError(f"compiled kernel has neither SASS nor PTX (asm keys {sorted(asm)})")


@contextlib.contextmanager
def capture_launches(offline: bool) -> Iterator[list[tuple[Any, Any, Any]]]:
    """Record (jit function, CompiledKernel, grid) for every Triton launch inside.

    ``offline``: launches are turned into compile-only warm-ups, and an autotuned kernel
    compiles all of its configs instead of benchmarking them (there is nothing to run on)."""
    from triton.runtime.autotuner import Autotuner  # triton: optional (the verify extra), 0.1 s to import
    from triton.runtime.jit import JITFunction  # triton: optional (the verify extra), 0.1 s to import

    seen: list[tuple[Any, Any, Any]] = []
    orig_run, orig_tune = JITFunction.run, Autotuner.run

    def run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        kernel = orig_run(self, *args, grid=grid, warmup=warmup or offline, **kwargs)
        if kernel is not None:
            seen.append((self, kernel, grid))
        return kernel

    def tune(self: Any, *args: Any, **kwargs: Any) -> Any:
        kernels = self.warmup(*args, **kwargs)
        return kernels[-1] if kernels else None

    JITFunction.run = run
    if offline:
        Autotuner.run = tune
    try:
        yield seen
    finally:
        JITFunction.run = orig_run
        Autotuner.run = orig_tune


def _grid_repr(grid: Any) -> str:
    if grid is None:
        return ""
    if callable(grid):
        return "callable"
    return repr(tuple(int(g) for g in grid))


def launches_of(h: Harness, fn: Callable[..., Any], shape: str, dtype: str, device: str,
                offline: bool, prefer: str = "sass") -> list[LaunchCode]:
    """The machine code of every kernel ``fn`` launches on ``shape`` (see the module docstring)."""

    dt = dtype_of(dtype)
    inputs = h.make_inputs(h.shapes[shape], dt, 0, device)
    outputs = h.make_outputs(h.shapes[shape], dt, device)
    if not offline:
        fn(*inputs, *outputs)  # compile and tune
    with capture_launches(offline) as seen:
        fn(*inputs, *outputs)
    if device.startswith("cuda"):
        import torch  # torch: 0.8 s to import; only once a kernel runs

        torch.cuda.synchronize()
    return codes_of(seen, offline, prefer)


def codes_of(seen: list[tuple[Any, Any, Any]], offline: bool = False, prefer: str = "sass") -> list[LaunchCode]:
    """Normalised machine code of the launches :func:`capture_launches` recorded."""
    codes: list[LaunchCode] = []
    for jit, kernel, grid in seen:
        kind, text = code_of(kernel, "ptx" if offline else prefer)
        names = [getattr(jit, "__name__", ""), getattr(kernel, "name", "") or ""]
        names = [n for n in names if n]
        warps = getattr(getattr(kernel, "metadata", None), "num_warps", None)
        codes.append(LaunchCode(names[0] if names else "?", kind, normalise(text, kind, names),
                                "" if offline else _grid_repr(grid), warps))
    return codes


def same_machine_code(a: list[LaunchCode], b: list[LaunchCode]) -> tuple[bool, str]:
    """Whether two launch lists are the same program; and one line saying how they differ."""
    if not a or not b:
        return False, "no Triton kernel launched by " + ("the original" if not a else "the candidate")
    if len(a) != len(b):
        return False, f"{len(a)} launches against {len(b)}"
    ka = sorted((x.kind, x.digest, x.grid) for x in a)
    kb = sorted((x.kind, x.digest, x.grid) for x in b)
    if ka == kb:
        return True, f"{len(a)} launch(es), identical {a[0].kind.upper()} and grids"
    if sorted(x[:2] for x in ka) == sorted(x[:2] for x in kb):
        return False, "same machine code, different grids"
    return False, "machine code differs"


# ---- the offline child process -------------------------------------------------------------

def _fn_location(fn: Callable[..., Any]) -> tuple[str, str]:
    return str(Path(inspect.getfile(fn)).resolve()), fn.__name__


def _offline_child(spec: dict[str, Any]) -> dict[str, Any]:
    """In a fresh interpreter with TRITON_INTERPRET off: compile both sides for sm_90."""

    if "kernelbench" in spec:
        return _offline_child_kernelbench(spec["kernelbench"], spec.get("cc", 90))
    h = Harness.from_file(Path(spec["harness"]))
    out: dict[str, Any] = {}
    with offline_cuda(spec.get("cc", 90)):
        for side in ("original", "candidate"):
            path, name = spec[side]
            mod = h.module if Path(path) == h.path.resolve() else import_file(Path(path))
            fn = getattr(mod, name)
            out[side] = [asdict(c) for c in launches_of(h, fn, spec["shape"], spec["dtype"], "cpu", offline=True)]
    return out


def offline_launches(h: Harness, orig_fn: Callable[..., Any], cand_fn: Callable[..., Any], shape: str,
                     dtype: str, cc: int = 90) -> tuple[list[LaunchCode], list[LaunchCode]]:
    """Both sides' machine code for sm_``cc``, compiled on this (GPU-less) machine in a child."""
    spec = {"harness": str(h.path.resolve()), "original": _fn_location(orig_fn),
            "candidate": _fn_location(cand_fn), "shape": shape, "dtype": dtype, "cc": cc}
    data = _run_child(spec)
    return ([LaunchCode(**c) for c in data["original"]], [LaunchCode(**c) for c in data["candidate"]])


# ---- KernelBench -----------------------------------------------------------------------------

def _kernelbench_sides(problem: Any, offline: bool, prefer: str) -> tuple[list[LaunchCode], list[LaunchCode], str]:
    """(baseline's launches, candidate's launches, the baseline's name), the models called on
    ``get_inputs()`` on ``problem.device``; offline, launches only compile."""
    import torch  # torch: 0.8 s to import; only once a kernel runs

    base, label = problem.baseline()
    inputs = problem.inputs({}, problem.seed)
    out: list[list[LaunchCode]] = []
    with torch.no_grad():
        for model in (base, problem.model_new):
            if not offline:
                model(*inputs)  # compile and tune
            with capture_launches(offline) as seen:
                model(*inputs)
            if problem.device.startswith("cuda"):
                torch.cuda.synchronize()
            out.append(codes_of(seen, offline, prefer))
    return out[0], out[1], label


def _offline_child_kernelbench(kb_spec: dict[str, Any], cc: int) -> dict[str, Any]:
    from skel.verifier import kernelbench as kb  # in the offline child only: KernelBench problems are built there

    with offline_cuda(cc):
        orig = import_file(Path(kb_spec["original"]))
        same = Path(kb_spec["candidate"]).resolve() == Path(kb_spec["original"]).resolve()
        cand = orig if same else import_file(Path(kb_spec["candidate"]))
        p = kb.Problem(orig, cand, "cpu", int(kb_spec.get("seed", 0)), kb.DEFAULT_TOLERANCE, kb_spec.get("dtype"))
        p.build(reference=False)
        a, b, label = _kernelbench_sides(p, offline=True, prefer="ptx")
    return {"original": [asdict(c) for c in a], "candidate": [asdict(c) for c in b], "label": label}


def _run_child(spec: dict[str, Any]) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-m", "skel.verifier.applied", json.dumps(spec)], capture_output=True,
                          text=True, env=env, timeout=_CHILD_TIMEOUT_S)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise RuntimeError(f"offline compile failed: {tail}")
    data: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return data


def compare_kernelbench(problem: Any, device: str, prefer: str = "sass") -> tuple[bool | None, str]:
    """(identical?, detail) for a KernelBench pair (see the module docstring); None when
    nothing could be compared, with the reason in one line."""
    if device.startswith("cuda"):
        a, b, label = _kernelbench_sides(problem, offline=False, prefer=prefer)
        where = "on get_inputs()"
    else:
        spec = {"kernelbench": {"original": str(Path(problem.original.__file__).resolve()),
                                "candidate": str(Path(problem.candidate.__file__).resolve()),
                                "seed": problem.seed, "dtype": problem.dtype}, "cc": 90}
        data = _run_child(spec)
        a, b = ([LaunchCode(**c) for c in data["original"]], [LaunchCode(**c) for c in data["candidate"]])
        label = data["label"]
        where = "compiled offline for sm_90 on get_inputs() (no GPU)"
    if not a:
        what = f"the candidate: {len(b)} launch(es)" if b else "the candidate launches none either"
        return None, (f"machine code not compared: {label} launches no Triton kernel (PyTorch only); "
                      f"{what}, {where}")
    same, how = same_machine_code(a, b)
    return same, f"{how} ({label} against ModelNew), {where}"


# ---- the stage -----------------------------------------------------------------------------

def _kernels(path: Path, prefix: str | None) -> list[Any]:
    from skel.kernels.triton import extract_file  # the Triton extractor: 130 ms to import (libcst)

    ks = extract_file(path.read_text(encoding="utf-8"), str(path))
    if prefix:
        ks = [k for k in ks if k.name.startswith(prefix)] or ks
    return ks


def compare_machine_code(h: Harness, orig_fn: Any, cand_fn: Any, device: str,
                         prefer: str = "sass", problem: Any = None) -> tuple[bool | None, str]:
    """(identical?, detail). None when it could not be compared, with the reason.
    ``prefer="ptx"`` skips nvdisasm (about a second a kernel) where many pairs are compared.
    ``problem``: a built KernelBench problem (:class:`skel.verifier.kernelbench.Problem`)."""
    if problem is not None:
        return compare_kernelbench(problem, device, prefer)
    dtype = h.dtypes[0]
    if device.startswith("cuda"):
        if not h.gpu_shapes:
            return None, "machine code not compared (the harness has no GPU shape)"
        shape = h.gpu_shapes[0]
        a = launches_of(h, orig_fn, shape, dtype, device, offline=False, prefer=prefer)
        b = launches_of(h, cand_fn, shape, dtype, device, offline=False, prefer=prefer)
        where = f"on {shape}"
    else:
        shape = (h.cpu_shapes or tuple(h.shapes))[0]
        a, b = offline_launches(h, orig_fn, cand_fn, shape, dtype)
        where = f"compiled offline for sm_90 on {shape} (no GPU)"
    same, how = same_machine_code(a, b)
    return same, f"{how}, {where}"


def check_applied(original: Path, candidate: Path, *, kernel: str | None, skeleton: str | None,
                  harness: Harness | None, orig_fn: Any, cand_fn: Any, device: str,
                  problem: Any = None) -> AppliedResult:
    notes: list[str] = []
    same_file = Path(original).resolve() == Path(candidate).resolve()
    prefix = getattr(cand_fn, "__name__", None) if same_file else None
    try:
        cand_kernels = _kernels(Path(candidate), prefix)
    except (ParseError, SyntaxError, ValueError, OSError) as e:
        return AppliedResult("not-applied", f"the candidate does not parse: {e}", notes)
    if kernel:
        named = [k for k in cand_kernels if k.name == kernel]
        if named:
            cand_kernels = named
        else:
            notes.append(f"no kernel named {kernel!r} in the candidate; all its kernels were assessed")
    if skeleton:

        sk = registry.get(skeleton)
        if not cand_kernels:
            return AppliedResult("not-applied", "the candidate has no Triton kernel", notes)
        present = [k.name for k in cand_kernels if sk.assess(k).present is not None]
        if not present:
            names = ", ".join(k.name for k in cand_kernels)
            return AppliedResult("not-applied", f"{skeleton} is not detected in the candidate ({names})", notes)
        notes.append(f"{skeleton} detected in {', '.join(present)}")
    if harness is None or orig_fn is None or cand_fn is None:
        notes.append("machine code not compared (no harness launchers)")
        return AppliedResult(None, "parses" + (f"; {skeleton} present" if skeleton else ""), notes)
    try:
        same, how = compare_machine_code(harness, orig_fn, cand_fn, device, problem=problem)
    except Exception as e:  # a compile failure is the next stages' verdict, not this one's
        notes.append(f"machine code not compared: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        return AppliedResult(None, "parses", notes)
    notes.append(how)
    if same and harness.measure == "kernel":
        return AppliedResult("no-op", f"the candidate compiles to the same machine code: {how}", notes)
    if same:
        notes.append(f"identical machine code is expected for MEASURE={harness.measure!r} (a launch-side change)")
    return AppliedResult(None, "parses; " + how, notes)


if __name__ == "__main__":  # the offline child: one JSON spec in, one JSON line out
    print(json.dumps(_offline_child(json.loads(sys.argv[1]))))
