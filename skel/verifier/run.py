"""The verifier's orchestration: stages in order, one Verification record, one report.

applied? → same results → tests → faster? — the first stage that decides a verdict stops
the run (a no-op is not timed, a wrong candidate is not tested). Every stage that did not
run, and everything the run could not check on this machine, is listed in ``unchecked``:
a report never reads as a pass for something that was not looked at.

The GPU stages (``applied``'s machine-code comparison, ``timing``, ``launch``, ``gpu``) are
imported lazily; where one is missing the run says so and goes on with what it can check.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import inspect
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType
from typing import Any

from skel.errors import VERDICT_EXIT, InputError, UsageError, VerifyError
from skel.store.evidence import ShapeResult, Verification
from skel.verifier import applied, correctness, integrity, kernelbench
from skel.verifier import harness as hm
from skel.verifier import kernelbench as kb
from skel.verifier.harness import import_file
from skel.verifier.tests_stage import run_tests


@dataclass
class StageReport:
    """One stage's outcome: passed, failed (it decided the verdict), or skipped (and why)."""

    name: str  # "applied" | "same results" | "tests" | "faster"
    status: str  # "passed" | "failed" | "skipped"
    detail: str
    notes: list[str] = field(default_factory=list)


@dataclass
class VerifyResult:
    record: Verification
    stages: list[StageReport]
    unchecked: list[str]  # what this run could not check, in plain words
    format: str  # "harness" | "kernelbench" | "tests"
    original: str
    candidate: str
    # the (atol, rtol) results were checked against, per dtype: what the max error is judged by
    tolerance: dict[str, tuple[float, float]] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return VERDICT_EXIT[self.record.verdict]

    def to_dict(self) -> dict[str, Any]:
        return {"record": self.record.to_dict(), "stages": [asdict(s) for s in self.stages],
                "unchecked": self.unchecked, "format": self.format, "original": self.original,
                "candidate": self.candidate, "exit_code": self.exit_code,
                "tolerance": {k: list(v) for k, v in self.tolerance.items()}}


@dataclass
class Request:
    """What to verify, as the command line or the API was asked."""

    original: Path
    candidate: Path
    kernel: str | None = None
    skeleton: str | None = None
    harness: Path | None = None
    tests: list[str] = field(default_factory=list)
    device: str = "cpu"
    shapes: list[str] | None = None
    dtype: str | None = None
    seed: int = 0
    tolerance: tuple[float, float] | None = None
    subject: str = "user"
    sides: tuple[str, str] | None = None  # launcher names in one file (an example's before/after)
    timing: bool = True  # False: stop after the same-results and tests stages (check only)


class _Run:
    """The state of one verification as the stages fill it in."""

    def __init__(self, req: Request) -> None:
        self.req = req
        self.stages: list[StageReport] = []
        self.unchecked: list[str] = []
        self.format = "harness"
        self.verdict: str | None = None
        self.detail = ""
        self.shapes: list[str] = []
        self.dtypes: list[str] = []
        self.max_error: dict[str, float] = {}
        self.tolerance: dict[str, tuple[float, float]] = {}
        self.timing: Any = None
        self.uses_dot = True  # the original or candidate calls tl.dot (verify() looks)
        self.snapshot: integrity.Snapshot | None = None  # the checker before the candidate was imported
        self.notes: list[str] = []  # the record's notes (memcheck's line)

    def stop(self, stage: str, verdict: str, detail: str, notes: list[str] | None = None) -> None:
        self.stages.append(StageReport(stage, "failed", detail, notes or []))
        self.verdict, self.detail = verdict, detail

    def skip(self, stage: str, why: str) -> None:
        self.stages.append(StageReport(stage, "skipped", why))


def verify(req: Request) -> VerifyResult:
    run = _Run(req)
    orig_mod, cand_mod = _stage_applied_parse(run)
    if run.verdict is None:
        h, orig_fn, cand_fn, problem = _load(run, orig_mod, cand_mod)
        run.uses_dot = _uses_dot(req, (orig_mod, cand_mod, getattr(h, "module", None)), (orig_fn, cand_fn))
        _stage_applied(run, h, orig_fn, cand_fn, problem)
        if run.verdict is None:
            _stage_same_results(run, h, orig_fn, cand_fn, problem)
        if run.verdict is None:
            _stage_tests(run)
        if run.verdict is None:
            _stage_timing(run, h, orig_fn, cand_fn)
            _stage_memcheck(run, h, cand_fn, problem)
    _check_integrity(run)
    checked = [s for s in run.stages if s.name in ("same results", "tests", "faster") and s.status == "passed"]
    if run.verdict in ("correct", "faster", "no-effect", "slower") and not any(
            s.name in ("same results", "tests") for s in checked):
        raise VerifyError("nothing checked, so no verdict: " + "; ".join(run.unchecked[:3]))
    for name in ("applied", "same results", "tests", "faster"):
        if not any(s.name == name for s in run.stages):
            run.skip(name, f"not run: the verdict was decided before ({run.verdict})")
    order = {"applied": 0, "same results": 1, "tests": 2, "faster": 3}
    run.stages.sort(key=lambda s: order[s.name])
    orig_label, cand_label = str(req.original), str(req.candidate)
    if req.sides:
        orig_label, cand_label = f"{req.original}::{req.sides[0]}", f"{req.candidate}::{req.sides[1]}"
    return VerifyResult(_record(run), run.stages, run.unchecked, run.format, orig_label, cand_label, run.tolerance)


# --- loading -------------------------------------------------------------------------------

def _stage_applied_parse(run: _Run) -> tuple[ModuleType | None, ModuleType | None]:
    """The candidate parses and imports; the original imports (else it is bad input)."""
    req = run.req
    for p in (req.original, req.candidate):
        if not p.is_file():
            raise InputError(f"{p}: no such file")
    try:
        ast.parse(req.candidate.read_text(encoding="utf-8"), str(req.candidate))
    except SyntaxError as e:
        run.stop("applied", "not-applied", f"the candidate does not parse: line {e.lineno}: {e.msg}")
        return None, None
    if req.harness:  # imported first: a generated harness prepares what the kernel files import
        hm.Harness.from_file(req.harness)
    orig = import_file(req.original)
    run.snapshot = integrity.Snapshot()  # the checker as it is before the candidate's code runs
    if req.candidate.resolve() == req.original.resolve():
        return orig, orig
    try:
        cand = import_file(req.candidate)
    except InputError as e:
        run.stop("applied", "failed", f"the candidate does not import: {e}")
        return orig, None
    why = integrity.tampered(run.snapshot, "when imported")
    if why:
        run.stop("applied", "wrong", why)
    return orig, cand


def _check_integrity(run: _Run) -> None:
    """The checker is still what it was before the candidate ran (integrity.py); if not, the
    verdict is "wrong" whatever the stages said."""
    why = integrity.tampered(run.snapshot, "during the run")
    if why and not (run.verdict == "wrong" and "tampering" in run.detail):
        decided = [s for s in run.stages if s.status != "skipped"]
        if decided:
            decided[-1].status, decided[-1].detail = "failed", why
        run.verdict, run.detail = "wrong", why


def _launcher(mod: ModuleType, names: list[str], path: Path) -> Any:
    for n in names:
        fn = getattr(mod, n, None)
        if callable(fn) and type(fn).__name__ not in ("JITFunction", "Autotuner", "Heuristics"):
            return fn
    raise InputError(f"{path}: no launcher ({' or '.join(names)}); a launcher takes inputs then outputs "
                     "(docs/harness.md)")


def _load(run: _Run, orig: Any, cand: Any) -> tuple[Any, Any, Any, Any]:
    """(harness, original launcher, candidate launcher, KernelBench problem or None)."""
    req = run.req
    is_harness = all(hasattr(orig, n) for n in hm.REQUIRED)
    if req.harness or is_harness:
        h = hm.Harness.from_file(req.harness) if req.harness else hm.Harness.from_module(orig, req.original)
        bind = getattr(h.module, "launcher_for", None)
        if req.harness and callable(bind) and not req.sides:  # a generated harness (skel harness) launches
            return h, bind(orig), bind(cand), None  # each file's kernel itself
        if req.sides:
            return h, h.launcher(req.sides[0]), h.launcher(req.sides[1]), None
        if cand is orig:
            return h, h.launcher("before"), h.launcher("after"), None
        names = [n for n in (req.kernel, "run") if n]
        return h, _launcher(orig, names, req.original), _launcher(cand, names, req.candidate), None
    if kb.is_kernelbench(orig):
        run.format = "kernelbench"
        p = kb.Problem(orig, cand, req.device, req.seed, req.tolerance or getattr(orig, "TOLERANCE", None)
                       or kb.DEFAULT_TOLERANCE, req.dtype)
        try:
            p.build()
        except kb.LaunchFailed as e:
            run.stop("applied", "failed", str(e))
            return None, None, None, None
        h, of, cf = kb.to_harness(p)
        return h, of, cf, p
    if req.tests:
        run.format = "tests"
        return None, None, None, None
    raise InputError(f"{req.original}: neither a skel harness (docs/harness.md: {', '.join(hm.REQUIRED)}) nor "
                     "KernelBench (Model, get_inputs, get_init_inputs); give --harness FILE or --tests PATH")


_JIT_TYPES = ("JITFunction", "Autotuner", "Heuristics", "InterpretedFunction")  # the last: TRITON_INTERPRET=1


def _calls_dot(text: str) -> bool:
    """Does Python source call ``tl.dot`` / ``tl.dot_scaled`` (any ``X.dot`` of Triton's
    language module, or ``dot`` imported from it)? Comments and strings do not count."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return "dot" in text  # unreadable: assume it may
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("dot", "dot_scaled") and \
                ast.unparse(node.value) in ("tl", "triton.language", "language"):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("triton.language") and \
                any(a.name in ("dot", "dot_scaled") for a in node.names):
            return True
    return False


def _jit_source(obj: Any) -> str:
    fn = obj
    while type(fn).__name__ in _JIT_TYPES and getattr(fn, "fn", None) is not None:
        fn = fn.fn
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        return str(getattr(obj, "src", ""))


def _uses_dot(req: Request, modules: tuple[Any, ...], launchers: tuple[Any, ...]) -> bool:
    """Whether the original or the candidate uses ``tl.dot``: their files (and the harness
    file), and the Triton kernels their modules and launchers reach by name (a kernel
    imported from elsewhere). Only then do the interpreter's ``tl.dot`` caveats apply."""
    texts = []
    for p in (req.original, req.candidate, req.harness):
        if p is not None:
            try:
                texts.append(p.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                return True  # cannot tell: keep the caveats
    names: dict[int, Any] = {}
    scopes = [vars(m) for m in modules if m is not None]
    scopes += [getattr(getattr(f, "__func__", f), "__globals__", {}) for f in launchers if f is not None]
    for scope in scopes:
        for v in list(scope.values()):
            if type(v).__name__ in _JIT_TYPES:
                names[id(v)] = v
    texts += [_jit_source(v) for v in names.values()]
    return any(_calls_dot(t) for t in texts)


# --- stages ----------------------------------------------------------------------------------

def _gpu_stage(name: str) -> Any:
    """A GPU-side stage module (applied, timing, launch, gpu), imported when needed;
    ImportError when it is not installed, which the caller turns into a note."""
    return importlib.import_module(f"skel.verifier.{name}")


def _host_code_differs(orig_fn: Any, cand_fn: Any, problem: Any) -> bool:
    """Whether the launchers (KernelBench: the forward methods) differ other than in the
    names of the kernels they launch. Unreadable source counts as different: the run then
    goes on to check results, which never passes anything silently."""
    if problem is not None:
        orig_fn, cand_fn = problem.baseline_class()[0].forward, type(problem.model_new).forward

    def shape(fn: Any) -> str:
        tree = ast.parse(inspect.cleandoc("\n" + inspect.getsource(fn)))
        glb = getattr(fn, "__globals__", {})
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and type(glb.get(node.id)).__name__ in _JIT_TYPES:  # interpreter too
                node.id = "KERNEL"
            if isinstance(node, ast.FunctionDef):
                node.name = "LAUNCHER"
        return ast.dump(tree)

    try:
        return shape(orig_fn) != shape(cand_fn)
    except (OSError, TypeError, SyntaxError):
        return True


def _stage_applied(run: _Run, h: Any, orig_fn: Any, cand_fn: Any, problem: Any = None) -> None:
    if run.verdict is not None:
        return
    req = run.req
    if req.candidate.resolve() != req.original.resolve():
        a, b = (ast.dump(ast.parse(p.read_text(encoding="utf-8"))) for p in (req.original, req.candidate))
        if a == b:
            run.stop("applied", "no-op", "the candidate's syntax tree is the original's (only comments or "
                     "formatting differ)")
            return
    r = applied.check_applied(req.original, req.candidate, kernel=req.kernel, skeleton=req.skeleton, harness=h,
                              orig_fn=orig_fn, cand_fn=cand_fn, device=req.device, problem=problem)
    notes = list(r.notes)
    if r.verdict == "no-op" and _host_code_differs(orig_fn, cand_fn, problem):
        # same kernels, different host code (grid, caching, what runs when): not a no-op
        # until the next stages say what the host change does
        notes.append(f"{r.detail}; but the host code differs, so the run goes on")
    elif r.verdict:
        run.stop("applied", r.verdict, r.detail, notes)
        return
    run.stages.append(StageReport("applied", "passed", r.detail, notes))
    said = " ".join(r.notes).lower()
    if problem is not None and "launches no triton kernel" in said:
        run.unchecked.append("machine code not compared: the original's Model is PyTorch only (no Triton kernel); "
                             "put the Triton version being improved in ORIGINAL as ModelNew to compare with it")
    elif req.device == "cpu":
        if "offline" in said and "not compared" not in said:
            run.unchecked.append("machine code compared offline only (compiled for the GPU target, not run): "
                                 "launch grids and the installed driver's code not compared")
        else:
            run.unchecked.append("machine code not compared (no GPU): a no-op change would not be caught here")


def _shape_names(run: _Run, h: Any) -> list[str]:
    req = run.req
    if req.shapes:
        unknown = [s for s in req.shapes if s not in h.shapes]
        if unknown:
            raise UsageError(f"--shapes: unknown {', '.join(unknown)}; the harness has {', '.join(h.shapes)}")
        return list(req.shapes)
    if req.device == "cpu":
        return list(h.cpu_shapes)
    return list(dict.fromkeys([*h.cpu_shapes, *h.gpu_shapes, *h.check_only]))


def _stage_same_results(run: _Run, h: Any, orig_fn: Any, cand_fn: Any, problem: Any) -> None:
    """The stage below, watched (integrity.Watch): Triton launches are counted per side and the
    checker is checked after every call of the candidate. A replaced checker is "wrong"; a
    candidate that passes but launches no Triton kernel where the original does is "not-applied"."""
    watch = integrity.Watch(run.snapshot)
    if problem is not None:
        watch.hook(problem.model_new, "candidate")
    try:
        with watch:
            _same_results(run, h, watch.wrap(orig_fn, "original") if problem is None else orig_fn,
                          watch.wrap(cand_fn, "candidate") if problem is None else cand_fn, problem)
    except integrity.Tampered as e:
        run.stop("same results", "wrong", str(e))
        return
    except Exception as e:  # noqa: BLE001 - only a CUDA fault is a verdict; anything else propagates
        if not _cuda_fault(e):
            raise
        # an illegal address poisons the CUDA context: nothing after this can run, so this is
        # the verdict (a graph replayed over freed tensors, an out-of-bounds store ...)
        first = " ".join(str(e).split("\n")[0].split())[:200]
        run.stop("same results", "wrong", f"a CUDA error while the two sides ran ({first}); the original alone "
                 "is the reference, so the candidate's launches are taken to have caused it: no later stage ran")
        return
    passed = [s for s in run.stages if s.name == "same results" and s.status == "passed"]
    if run.verdict is not None or not passed:
        return
    why = watch.no_kernel(lambda: _original_once(run, h, orig_fn, problem), kernelbench=problem is not None)
    if why:
        run.stages.remove(passed[0])
        run.stop("same results", "not-applied", why, passed[0].notes)


def _cuda_fault(e: BaseException) -> bool:
    """A CUDA error raised by torch (``torch.AcceleratorError`` since 2.8, a ``RuntimeError``
    before): "CUDA error: an illegal memory access was encountered" and the like."""
    return type(e).__name__ == "AcceleratorError" or (isinstance(e, RuntimeError) and "CUDA error" in str(e))


def _original_once(run: _Run, h: Any, orig_fn: Any, problem: Any) -> None:
    """The original (KernelBench: the model the candidate's machine code is compared with) once,
    on the first shape and dtype checked: to count its kernel launches."""
    if problem is not None:
        import torch  # torch: 0.8 s to import; only once a kernel runs

        model = problem.baseline()[0]
        with torch.no_grad():
            model(*problem.inputs({}, problem.seed))
        return
    shape = h.shapes[_shape_names(run, h)[0]]
    dtype = correctness.dtype_of(run.dtypes[0] if run.dtypes else h.dtypes[0])
    orig_fn(*h.make_inputs(shape, dtype, run.req.seed, run.req.device), *h.make_outputs(shape, dtype, run.req.device))


def _same_results(run: _Run, h: Any, orig_fn: Any, cand_fn: Any, problem: Any) -> None:
    req = run.req
    if run.format == "tests":
        run.skip("same results", "no harness or KernelBench problem: only the project's tests check results")
        run.unchecked.append("same results not checked against a reference (no harness): the tests are the check")
        return
    if problem is not None:
        res = kernelbench.same_results(problem)
        if req.device == "cpu":
            run.unchecked.append("allocator not poisoned on the CPU (each output is fresh memory there)")
    else:
        if req.device == "cpu" and h.cpu_skip:
            run.skip("same results", f"the CPU interpreter cannot run this problem: {h.cpu_skip}")
            run.unchecked.append(f"same results not checked on the CPU: {h.cpu_skip}")
            return
        names = _shape_names(run, h)
        if not names:
            raise VerifyError(f"{h.path}: no shape to check on {req.device} (CPU_SHAPES is empty)")
        dtypes = [req.dtype] if req.dtype else list(h.dtypes)
        if req.dtype and req.dtype not in h.dtypes:
            raise UsageError(f"--dtype {req.dtype}: the harness has {', '.join(h.dtypes)}")
        res = correctness.same_results(h, orig_fn, cand_fn, shape_names=names, dtypes=dtypes, seed=req.seed,
                                       device=req.device, tolerance=req.tolerance,
                                       fresh=2)
        if h.split is None:
            run.unchecked.append("partitioned vs whole not checked (the harness has no split)")
        if not h.length:
            run.unchecked.append("error growth with length not checked (the harness has no LENGTH)")
    run.shapes, run.dtypes, run.max_error = res.shapes, res.dtypes, res.max_error
    run.tolerance = {d: problem.tolerance if problem is not None else req.tolerance or h.tolerance(d)
                     for d in res.dtypes}
    notes = [*res.notes, *(f"inconclusive: {c}" for c in res.inconclusive)]
    if res.inconclusive:
        run.unchecked.append(f"{len(res.inconclusive)} case(s) inconclusive: the original fails them too")
    if req.device == "cpu" and run.uses_dot:  # neither side calls tl.dot: no tl.dot caveat
        if "bfloat16" in res.dtypes or any("bfloat16" in c for c in res.inconclusive):
            run.unchecked.append("bf16 tl.dot is unreliable under the interpreter: bf16 results "
                                 "on the CPU prove little; check on a GPU")
        run.unchecked.append("tl.dot input_precision is ignored by the interpreter: TF32 drift does not show "
                             "on the CPU")
    if res.verdict:
        run.stop("same results", res.verdict, res.detail, notes)
        return
    if not res.checked:
        raise VerifyError("nothing checked: the original fails every case too (is the harness's reference "
                          "right?): " + "; ".join(res.inconclusive[:3]))
    run.stages.append(StageReport("same results", "passed", f"{len(res.checked)} case(s) match the reference",
                                  [*(f"passed: {c}" for c in res.checked), *notes]))


def _stage_tests(run: _Run) -> None:
    req = run.req
    if not req.tests:
        run.skip("tests", "no --tests given")
        return
    r = run_tests(req.tests, req.original, req.candidate, device=req.device)
    if r.verdict:
        run.stop("tests", r.verdict, r.detail, r.notes)
        return
    if not r.candidate.passed:
        if run.format == "tests":
            raise VerifyError(f"nothing checked: {r.detail}")
        run.unchecked.append("the given tests checked nothing")
    run.stages.append(StageReport("tests", "passed", r.detail, r.notes))


def _stage_timing(run: _Run, h: Any, orig_fn: Any, cand_fn: Any) -> None:
    req = run.req
    if not req.timing:
        run.skip("faster", "not asked (check only)")
        run.unchecked.append("no timing: a check-only run")
        run.verdict, run.detail = "correct", "same results; not timed (check only)"
        return
    if req.device == "cpu":
        run.stages.append(StageReport("faster", "skipped", "no timing on the CPU (TRITON_INTERPRET=1): speed not "
                                      "measured", [MEMCHECK_CPU]))
        run.notes.append(MEMCHECK_CPU)
        run.unchecked.append("no timing on the CPU: whether the candidate is faster is unknown")
        run.verdict, run.detail = "correct", "same results; not timed (CPU)"
        return
    if h is None:
        run.skip("faster", "no harness to time with (tests only)")
        run.unchecked.append("no timing: only tests were given, no harness")
        run.verdict, run.detail = "correct", "tests pass; not timed"
        return
    try:
        if h.measure == "kernel":
            timing = _gpu_stage("timing")

            names = [s for s in (req.shapes or h.gpu_shapes)]
            t = timing.time_pair(h, orig_fn, cand_fn, device=req.device, shapes=names,
                                 dtype=req.dtype or h.dtypes[0], seed=req.seed)
        else:
            launch = _gpu_stage("launch")

            t = launch.measure(h, orig_fn, cand_fn, req.device)
    except ImportError as e:
        run.skip("faster", f"timing stage not available ({e})")
        run.unchecked.append("no timing: the timing stage is not installed")
        run.verdict, run.detail = "correct", "same results; not timed (no timing stage)"
        return
    run.timing = t
    detail = (f"speedup {t.speedup:.3f}x ± {t.spread or 0:.3f} (noise {t.noise or 0:.3f}) by {t.method}"
              if t.speedup is not None else f"{t.verdict} ({t.method})")
    if t.verdict == "wrong":
        run.stop("faster", "wrong", "; ".join(t.notes) or detail, list(t.notes))
        return
    run.stages.append(StageReport("faster", "passed" if t.verdict == "faster" else "failed", detail, list(t.notes)))
    run.verdict, run.detail = t.verdict, detail


MEMCHECK_CPU = "memcheck: not run (CPU)"


def claims_validated(run: _Run) -> bool:
    """Would this run count towards a skeleton's ``validated``: faster by the status bar, on a
    kernel that is not a skeleton's own example."""
    from skel.skeletons.status import VALIDATED_MIN  # read at call time: skeletons sit in another layer

    t = run.timing
    return (run.verdict == "faster" and run.req.subject != "example" and t is not None
            and (t.speedup or 0.0) >= VALIDATED_MIN)


def memcheck_target(req: Request, h: Any, cand_fn: Any, problem: Any) -> Any:
    """What the memcheck child launches for this request (:class:`sanitizer.Target`)."""
    from skel.verifier.sanitizer import Target  # the sanitizer: only for a run that claims validated on a GPU

    if problem is not None:
        return Target(str(req.original), str(req.candidate), dtype=req.dtype, seed=req.seed, kernelbench=True)
    shape = (req.shapes or list(h.gpu_shapes) or list(h.shapes))[0]
    dtype = req.dtype or h.dtypes[0]
    if req.harness and callable(getattr(h.module, "launcher_for", None)) and not req.sides:
        return Target(str(req.harness), str(req.candidate), None, shape, dtype, req.seed)
    launcher = req.sides[1] if req.sides else getattr(cand_fn, "__name__", None)
    return Target(str(h.path), str(req.candidate), launcher, shape, dtype, req.seed)


def _stage_memcheck(run: _Run, h: Any, cand_fn: Any, problem: Any) -> None:
    """compute-sanitizer memcheck on the first GPU shape of a run that claims ``validated``;
    an error found turns the verdict into "failed" with the first error in one line."""
    req = run.req
    if req.device == "cpu" or h is None or not claims_validated(run):
        return
    from skel.verifier import sanitizer  # the sanitizer: only for a run that claims validated on a GPU

    r = sanitizer.memcheck(memcheck_target(req, h, cand_fn, problem))
    line = r.line()
    run.notes.append(line)
    stage = next(s for s in run.stages if s.name == "faster")
    stage.notes.append(line)
    if r.status == "errors":
        stage.status = "failed"
        run.verdict, run.detail = "failed", line
    elif not r.ran:
        run.unchecked.append(f"{line}: memory errors that change no result not looked for")


# --- the record --------------------------------------------------------------------------------

def _environment(device: str) -> dict[str, Any]:
    try:
        gpu = _gpu_stage("gpu")

        facts = gpu.device_facts(device)
        return {k: facts.get(k) if isinstance(facts, dict) else getattr(facts, k, None)
                for k in ("device", "cc", "backend", "torch", "triton", "driver")}
    except Exception:  # noqa: BLE001 - not merged yet, or no GPU: fall back to what torch says
        pass
    import torch  # torch: 0.8 s to import; only once a kernel runs

    try:
        import triton  # triton: optional (the verify extra), 0.1 s to import

        tv = triton.__version__
    except ImportError:
        tv = None
    env: dict[str, Any] = {"torch": torch.__version__, "triton": tv, "driver": None, "cc": None}
    if device.startswith("cuda"):
        major, minor = torch.cuda.get_device_capability()
        env.update(device=torch.cuda.get_device_name(), cc=major * 10 + minor,
                   backend="rocm" if getattr(torch.version, "hip", None) else "cuda")
    else:
        env.update(device="cpu (TRITON_INTERPRET=1)", backend="cpu")
    return env


def _record(run: _Run) -> Verification:
    req = run.req
    if req.subject == "example" and req.skeleton:
        kernel = f"example:{req.skeleton}"
    elif req.kernel:
        kernel = f"{req.original}::{req.kernel}"
    else:
        kernel = "file:" + hashlib.sha1(req.original.read_bytes()).hexdigest()
    t = run.timing
    env = _environment(req.device)
    assert run.verdict is not None
    return Verification(
        skeleton=req.skeleton or "", kernel=kernel, verdict=run.verdict, subject=req.subject,
        date=datetime.now(timezone.utc).isoformat(timespec="seconds"), **env,
        shapes=run.shapes, dtypes=run.dtypes, max_error=run.max_error,
        speedup=getattr(t, "speedup", None), spread=getattr(t, "spread", None), noise=getattr(t, "noise", None),
        timing=getattr(t, "method", None),
        per_shape=[s if isinstance(s, ShapeResult) else ShapeResult(**s) for s in getattr(t, "per_shape", [])],
        detail=run.detail, notes=list(run.notes))
