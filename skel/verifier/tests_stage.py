"""The tests stage: the project's own pytest tests, run with the candidate in place.

The tests run twice in fresh pytest processes, once as they are and once with the
candidate substituted: this module is also a pytest plugin (``-p skel.verifier.tests_stage``)
that, before collection, imports the original module under its real dotted name and sets
on it every function, class and Triton kernel the candidate file defines. Test modules
imported afterwards (``from pkg.ops import kernel``) and the original's own functions (which
look their kernels up in the module's globals) then reach the candidate's code.

A test counts against the candidate only if it passes with the original and fails with
the candidate; tests failing either way are reported, not blamed.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skel.errors import InputError

ENV_ORIGINAL, ENV_CANDIDATE, ENV_REPORT = "SKEL_SWAP_ORIGINAL", "SKEL_SWAP_CANDIDATE", "SKEL_SWAP_REPORT"


def module_name_of(path: Path) -> tuple[str, Path]:
    """The dotted name ``path`` is imported under, and the folder that goes on sys.path:
    climb while the folder is a package (has ``__init__.py``)."""
    path = path.resolve()
    parts = [path.stem]
    root = path.parent
    while (root / "__init__.py").is_file():
        parts.insert(0, root.name)
        root = root.parent
    return ".".join(parts), root


@dataclass
class TestRun:
    passed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    skipped: int = 0
    rc: int = 0
    tail: str = ""


@dataclass
class TestsResult:
    verdict: str | None  # "tests-failed" | None (passed)
    detail: str
    original: TestRun
    candidate: TestRun
    notes: list[str] = field(default_factory=list)


def _run(tests: list[str], original: Path, candidate: Path | None, device: str, cwd: Path) -> TestRun:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        env = dict(os.environ)
        env[ENV_ORIGINAL], env[ENV_REPORT] = str(original), str(report)
        env.pop(ENV_CANDIDATE, None)
        if candidate is not None:
            env[ENV_CANDIDATE] = str(candidate)
        if device == "cpu":
            env["TRITON_INTERPRET"] = "1"
        skel_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [skel_root, env.get("PYTHONPATH")]))
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "skel.verifier.tests_stage", "-p", "no:cacheprovider",
               *tests]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env, timeout=1800)
        run = TestRun(rc=proc.returncode, tail=(proc.stdout + proc.stderr)[-2000:])
        if report.is_file():
            data = json.loads(report.read_text())
            run.passed, run.failed, run.skipped = data["passed"], data["failed"], data["skipped"]
        return run


def run_tests(tests: list[str], original: Path, candidate: Path, *, device: str,
              cwd: Path | None = None) -> TestsResult:
    """The stage: the tests with the original, then with the candidate."""
    missing = [t for t in tests if not Path(t.split("::")[0]).exists()]
    if missing:
        raise InputError(f"--tests: no such file {', '.join(missing)}")
    cwd = cwd or Path.cwd()
    base = _run(tests, original, None, device, cwd)
    new = _run(tests, original, candidate, device, cwd)
    notes = []
    if not base.passed and not base.failed:
        notes.append(f"the tests ran nothing with the original (pytest exit {base.rc}): {base.tail[-300:]}")
    if base.failed:
        notes.append(f"{len(base.failed)} test(s) fail with the original too (not counted): "
                     f"{', '.join(base.failed[:5])}")
    broken = [t for t in new.failed if t not in base.failed]
    gone = [t for t in base.passed if t not in new.passed and t not in new.failed]
    if broken or gone or (new.rc not in (0, 1, 5) and not new.failed):
        what = broken or gone or [f"pytest exit {new.rc}: {new.tail[-300:]}"]
        return TestsResult("tests-failed", f"{len(broken or gone or what)} test(s) fail with the candidate "
                           f"that pass with the original: {', '.join(what[:5])}", base, new, notes)
    if not new.passed:
        return TestsResult(None, "no test passed with either side: nothing checked", base, new,
                           [*notes, "tests ran but checked nothing"])
    return TestsResult(None, f"{len(new.passed)} passed with the candidate ({len(base.passed)} with the original)",
                       base, new, notes)


# --- the pytest plugin (runs inside the pytest subprocess) --------------------------------

def _swap() -> None:
    original = Path(os.environ[ENV_ORIGINAL])
    name, root = module_name_of(original)
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    target = importlib.import_module(name)
    cand_path = os.environ.get(ENV_CANDIDATE)
    if not cand_path:
        return
    spec = importlib.util.spec_from_file_location(name + "__skel_candidate", cand_path)
    assert spec is not None and spec.loader is not None
    cand = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = cand
    spec.loader.exec_module(cand)
    for attr, value in vars(cand).items():
        if attr.startswith("__"):
            continue
        defined_here = getattr(value, "__module__", None) == spec.name or type(value).__name__ in (
            "JITFunction", "Autotuner", "Heuristics")
        if defined_here:
            setattr(target, attr, value)


def pytest_configure(config: Any) -> None:
    if ENV_ORIGINAL not in os.environ:
        return
    _swap()


def pytest_runtest_logreport(report: Any) -> None:
    outcomes = _OUTCOMES
    if report.when == "call" or (report.when == "setup" and not report.passed):
        if report.passed:
            outcomes["passed"].append(report.nodeid)
        elif report.skipped:
            outcomes["skipped"] += 1
        else:
            outcomes["failed"].append(report.nodeid)


_OUTCOMES: dict[str, Any] = {"passed": [], "failed": [], "skipped": 0}


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    path = os.environ.get(ENV_REPORT)
    if path and ENV_ORIGINAL in os.environ:
        Path(path).write_text(json.dumps(_OUTCOMES))
