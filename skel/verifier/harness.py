"""Loading a problem in skel's harness format (docs/harness.md) into one object.

Everything the verifier runs goes through :class:`Harness`: a skeleton's example pair, a
user's ORIGINAL/CANDIDATE files, and (adapted in ``kernelbench.py``) a KernelBench problem.
Loading imports the file, so it needs torch and Triton; nothing here is imported by
``skel suggest``.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

from skel.errors import InputError

REQUIRED = ("SHAPES", "DTYPES", "TOLERANCES", "make_inputs", "make_outputs", "reference")
MEASURES = ("kernel", "compile", "launch", "first-call")


def import_file(path: Path, name: str | None = None) -> ModuleType:
    """Import a Python file as a module (Triton needs kernels to live in real files)."""
    path = Path(path).resolve()
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    mod_name = name or f"skel_verify_{abs(hash(str(path))):x}"
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise InputError(f"{path}: cannot be imported as a Python module")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = mod
    try:
        spec.loader.exec_module(mod)
    except Exception as e:  # a user's file: any failure is bad input, said in one line
        sys.modules.pop(mod_name, None)
        raise InputError(f"{path}: importing it failed: {type(e).__name__}: {e}") from e
    return mod


@dataclass
class Harness:
    """A problem: shapes, dtypes, inputs, outputs, reference, tolerances, roofline terms."""

    module: ModuleType
    path: Path

    @classmethod
    def from_module(cls, module: ModuleType, path: Path | None = None) -> "Harness":
        missing = [n for n in REQUIRED if not hasattr(module, n)]
        where: Path | str = path or getattr(module, "__file__", None) or module.__name__
        if missing:
            raise InputError(f"{where}: not a skel harness (missing {', '.join(missing)}; see docs/harness.md)")
        h = cls(module, Path(str(where)))
        if h.measure not in MEASURES:
            raise InputError(f"{where}: MEASURE must be one of {', '.join(MEASURES)}, not {h.measure!r}")
        unknown = [s for s in (*h.cpu_shapes, *h.check_only, *h.fixes) if s not in h.shapes]
        if unknown:
            raise InputError(f"{where}: CPU_SHAPES/CHECK_ONLY/FIXES name unknown shapes {unknown}")
        return h

    @classmethod
    def from_file(cls, path: Path) -> "Harness":
        return cls.from_module(import_file(path), Path(path))

    def _get(self, name: str, default: Any) -> Any:
        return getattr(self.module, name, default)

    @property
    def shapes(self) -> dict[str, dict[str, int]]:
        return dict(self.module.SHAPES)

    @property
    def cpu_shapes(self) -> tuple[str, ...]:
        return tuple(self._get("CPU_SHAPES", ()))

    @property
    def check_only(self) -> tuple[str, ...]:
        return tuple(self._get("CHECK_ONLY", ()))

    @property
    def fixes(self) -> tuple[str, ...]:
        """Shapes where the *before* is expected to be wrong: the pair shows a correctness
        technique (int64 offsets past 2**31 elements), so there the evidence is "before
        wrong, after right", not a failure."""
        return tuple(self._get("FIXES", ()))

    @property
    def gpu_shapes(self) -> tuple[str, ...]:
        default = tuple(s for s in self.shapes if s not in self.cpu_shapes and s not in self.check_only)
        return tuple(self._get("GPU_SHAPES", default))

    @property
    def dtypes(self) -> tuple[str, ...]:
        return tuple(self.module.DTYPES)

    @property
    def fixed(self) -> tuple[str, ...]:
        return tuple(self._get("FIXED", ()))

    @property
    def cpu_skip(self) -> str:
        return str(self._get("CPU_SKIP", "") or "")

    @property
    def measure(self) -> str:
        return str(self._get("MEASURE", "kernel"))

    @property
    def sequence(self) -> tuple[str, ...]:
        return tuple(self._get("SEQUENCE", ()))

    @property
    def length(self) -> str | None:
        return self._get("LENGTH", None)

    @property
    def error_ratio(self) -> float | None:
        """ERROR_RATIO: how many times the original's error a candidate may reach (above a
        floor of a few ulps) before it is wrong; None = the verifier's default, 0 = not checked."""
        v = self._get("ERROR_RATIO", None)
        return None if v is None else float(v)

    def tolerance(self, dtype: str) -> tuple[float, float]:
        atol, rtol = self.module.TOLERANCES[dtype]
        return float(atol), float(rtol)

    def make_inputs(self, shape: dict[str, int], dtype: Any, seed: int, device: str) -> tuple:
        import torch  # torch: 0.8 s to import; only once a kernel runs

        # Tensors a harness makes without naming a device land on the device under test
        # (random inputs past 2**31 elements take tens of seconds on one CPU core). A harness
        # that draws from a CPU generator cannot run that way; it runs as written.
        try:
            with torch.device(device):
                return tuple(self.module.make_inputs(dict(shape), dtype, seed, device))
        except RuntimeError as e:
            if "generator" not in str(e):
                raise
        return tuple(self.module.make_inputs(dict(shape), dtype, seed, device))

    def make_outputs(self, shape: dict[str, int], dtype: Any, device: str) -> tuple:
        import torch  # torch: 0.8 s to import; only once a kernel runs

        with torch.device(device):
            return tuple(self.module.make_outputs(dict(shape), dtype, device))

    def reference(self, *inputs: Any) -> tuple:
        out = self.module.reference(*inputs)
        return tuple(out) if isinstance(out, (tuple, list)) else (out,)

    def bytes_moved(self, shape: dict[str, int], dtype: Any) -> int | None:
        f = self._get("bytes_moved", None)
        return int(f(dict(shape), dtype)) if f else None

    def flops(self, shape: dict[str, int], dtype: Any) -> int | None:
        f = self._get("flops", None)
        return int(f(dict(shape), dtype)) if f else None

    @property
    def split(self) -> Callable[..., list] | None:
        return self._get("split", None)

    def launcher(self, name: str) -> Callable[..., Any]:
        fn = self._get(name, None)
        if not callable(fn):
            raise InputError(f"{self.path}: no launcher {name!r}")
        return fn
