"""KernelBench's format, verified as it is: ``Model``, ``get_inputs`` and ``get_init_inputs``
in ORIGINAL, ``ModelNew`` in CANDIDATE.

Both models are built from the same init inputs under the same seed, and ModelNew gets
Model's state dict where their parameters match, so a difference in results is the
kernels', not the weights'. KernelBench models *return* their outputs, so the harness
rules become: the allocator is poisoned with NaN blocks of the outputs' sizes before every
run (a ``torch.empty`` that is never written returns NaN, not the last run's answer),
outputs must not share storage with an input, and inputs must be unchanged; inputs sit in
guarded buffers (``guards.py``: a write past an input's end, or a read past it that puts NaN
in an output, fails; the outputs the model allocates itself cannot be guarded). A candidate
inside the tolerance whose error is ``ERROR_RATIO`` (default 50) times Model's own error in
its dtype, against the float64 reference, is wrong (``correctness.far_from_original``). Fresh shapes
come from perturbing the module-level int constants that ``get_inputs`` reads (and
``get_init_inputs`` does not), then calling ``get_inputs`` again.

The reference is Model run in float64 on float64 copies of the inputs (Model in its own
dtype where float64 is not supported, said in a note). The tolerance is KernelBench's
(atol = rtol = 1e-2) unless ORIGINAL sets ``TOLERANCE = (atol, rtol)`` or the caller gives one.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from skel.errors import InputError
from skel.verifier import guards
from skel.verifier.correctness import (RATIO, REPEAT, Case, LaunchFailed, OutputCheck, SameResults, blame_reads,
                                       compare, dtype_of, fp64, fresh_shapes, guard_checks, judge, reduction_length,
                                       set_floors, shape_label, unchanged, unexpected_nonfinite)
from skel.verifier.harness import Harness

DEFAULT_TOLERANCE = (1e-2, 1e-2)  # KernelBench's own correctness check


def is_kernelbench(module: ModuleType) -> bool:
    return all(callable(getattr(module, n, None)) for n in ("Model", "get_inputs", "get_init_inputs"))


@dataclass
class Problem:
    """A KernelBench pair, built: the two models and how to make their inputs."""

    original: ModuleType
    candidate: ModuleType
    device: str
    seed: int
    tolerance: tuple[float, float]
    dtype: str | None = None  # cast float inputs (and models) to it; None = as get_inputs makes them
    notes: list[str] = field(default_factory=list)
    model: Any = None
    model_new: Any = None
    reference_model: Any = None

    def build(self, reference: bool = True) -> None:
        """Both models, Model's weights copied into ModelNew; with ``reference``, Model's
        float64 copy too (not needed where only machine code is read)."""
        import torch  # torch: 0.8 s to import; only once a kernel runs

        mod = self.original
        if not callable(getattr(self.candidate, "ModelNew", None)):

            raise InputError(f"{self.candidate.__file__}: KernelBench candidate has no ModelNew")
        torch.manual_seed(self.seed)
        init = list(mod.get_init_inputs())
        torch.manual_seed(self.seed)
        self.model = mod.Model(*init)
        torch.manual_seed(self.seed)
        try:
            self.model_new = self.candidate.ModelNew(*init)
        except Exception as e:  # the candidate's constructor
            raise LaunchFailed(f"ModelNew(*get_init_inputs()) raised {type(e).__name__}: {e}") from e
        src, dst = self.model.state_dict(), self.model_new.state_dict()
        if src and {k: tuple(v.shape) for k, v in src.items()} == {k: tuple(v.shape) for k, v in dst.items()}:
            self.model_new.load_state_dict(src)
        elif src:
            self.notes.append("ModelNew's parameters are not Model's (names or shapes differ): both built from "
                              "the same seed, weights not copied")
        if reference:
            try:
                self.reference_model = copy.deepcopy(self.model).to(torch.float64)
            except Exception as e:  # noqa: BLE001 - a model that cannot be copied: use it as is
                self.notes.append(f"no float64 copy of Model ({type(e).__name__}); the reference is Model as is")
                self.reference_model = None
        self.model.to(self.device)
        self.model_new.to(self.device)
        if self.dtype:

            self.model.to(dtype_of(self.dtype))
            self.model_new.to(dtype_of(self.dtype))

    # --- what the candidate's machine code is compared with ----------------------------------
    def baseline_class(self) -> tuple[type, str]:
        """The class whose kernels the candidate's are compared with, and its name in messages:
        ORIGINAL's own ``ModelNew`` where it has one and CANDIDATE is another file (the Triton
        version being improved), else ``Model``."""
        own = getattr(self.original, "ModelNew", None)
        if callable(own) and isinstance(own, type) and self.candidate is not self.original:
            return own, "the original's ModelNew"
        return type(self.model), "Model"

    def baseline(self) -> tuple[Any, str]:
        """An instance of :meth:`baseline_class` on this problem's device (Model's weights where
        they fit), and its name in messages."""
        import torch  # torch: 0.8 s to import; only once a kernel runs

        cls, label = self.baseline_class()
        if cls is type(self.model):
            return self.model, label
        torch.manual_seed(self.seed)
        try:
            m = cls(*self.original.get_init_inputs())
        except Exception as e:  # the original's own ModelNew
            raise LaunchFailed(f"the original's ModelNew(*get_init_inputs()) raised {type(e).__name__}: {e}") from e
        src, dst = self.model.state_dict(), m.state_dict()
        if src and {k: tuple(v.shape) for k, v in src.items()} == {k: tuple(v.shape) for k, v in dst.items()}:
            m.load_state_dict(src)
        m.to(self.device)
        if self.dtype:
            m.to(dtype_of(self.dtype))
        return m, label

    # --- inputs, with perturbed constants -------------------------------------------------
    def constants(self) -> dict[str, int]:
        """The module-level ints ``get_inputs`` reads and ``get_init_inputs`` does not."""
        mod = self.original
        init_names = set(mod.get_init_inputs.__code__.co_names)
        return {n: v for n in mod.get_inputs.__code__.co_names
                if n not in init_names and isinstance(v := getattr(mod, n, None), int) and not isinstance(v, bool)}

    def inputs(self, shape: dict[str, int], seed: int) -> list[Any]:
        import torch  # torch: 0.8 s to import; only once a kernel runs


        mod = self.original
        old = {k: getattr(mod, k) for k in shape}
        try:
            for k, v in shape.items():
                setattr(mod, k, v)
            torch.manual_seed(seed)
            xs = list(mod.get_inputs())
        finally:
            for k, v in old.items():
                setattr(mod, k, v)
        out = []
        for x in xs:
            if isinstance(x, torch.Tensor):
                x = x.to(self.device)
                if self.dtype and x.dtype.is_floating_point:
                    x = x.to(dtype_of(self.dtype))
            out.append(x)
        return out

    def reference(self, saved: list[Any]) -> tuple:
        import torch  # torch: 0.8 s to import; only once a kernel runs

        if self.reference_model is not None:
            try:
                with torch.no_grad():
                    return _tuple(self.reference_model.to("cpu")(*[fp64(x).cpu() if hasattr(x, "cpu") else x
                                                                  for x in saved]))
            except Exception as e:  # noqa: BLE001 - an op without float64 support
                self.notes.append(f"Model does not run in float64 ({type(e).__name__}); the reference is Model as is")
                self.reference_model = None
        with torch.no_grad():
            return _tuple(self.model(*[x.clone() if isinstance(x, torch.Tensor) else x for x in saved]))

    # --- one checked run --------------------------------------------------------------------
    def run(self, model: Any, case: Case) -> list[OutputCheck]:
        import torch  # torch: 0.8 s to import; only once a kernel runs

        atol, rtol = self.tolerance

        def launch(poisoned: Any = None) -> tuple[list, list, tuple, dict]:
            inputs, gin = guards.guard_all(self.inputs(case.shape, case.seed), poisoned)
            saved = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
            _poison_allocator(ref, self.device)
            try:
                with torch.no_grad():
                    outs = _tuple(model(*inputs))
                if self.device.startswith("cuda"):
                    torch.cuda.synchronize()
            except Exception as e:  # the code under test
                raise LaunchFailed(f"{type(e).__name__}: {' '.join(str(e).split())[:300]}") from e
            return inputs, saved, outs, gin

        fresh = self.inputs(case.shape, case.seed)
        ref = self.reference([x.clone() if isinstance(x, torch.Tensor) else x for x in fresh])
        inputs, saved, outs, gin = launch()
        checks = [compare(o, r, atol, rtol, i) for i, (o, r) in enumerate(zip(outs, ref))]
        if self.reference_model is not None:  # Model as is is no reference to measure its own error against
            set_floors(checks, outs, reduction_length(saved, outs))
        if len(outs) != len(ref):
            checks.append(OutputCheck(len(outs), float("inf"), float("inf"), 1, 1, atol, rtol,
                                      note=f"{len(outs)} outputs but Model gives {len(ref)}"))
        for i, o in enumerate(outs):
            for j, x in enumerate(inputs):
                if _overlap(o, x):
                    checks.append(OutputCheck(i, float("nan"), float("nan"), 1, 1, atol, rtol,
                                              note=f"aliases input {j} (shares its storage)"))
        for j, (x, s) in enumerate(zip(inputs, saved)):
            if not unchanged(x, s):
                checks.append(OutputCheck(-1 - j, float("nan"), float("nan"), 1, 1, atol, rtol,
                                          note=f"input {j} was modified by the model"))
        checks.extend(guard_checks(gin, {}, atol, rtol))
        if gin and any(c.nonfinite for c in checks if c.index >= 0):
            def count(poisoned: Any) -> int:
                return unexpected_nonfinite(launch(poisoned)[2], ref)

            try:
                source = guards.nan_source(count, sorted(gin))
            except LaunchFailed:
                source = ""
            if source:
                blame_reads(checks, source)
        return checks


def _tuple(out: Any) -> tuple:
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def _overlap(a: Any, b: Any) -> bool:
    """Whether two tensors' storages share any byte."""
    import torch  # torch: 0.8 s to import; only once a kernel runs

    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or a.device != b.device:
        return False
    sa, sb = a.untyped_storage(), b.untyped_storage()
    a0, b0 = sa.data_ptr(), sb.data_ptr()
    return a0 < b0 + sb.nbytes() and b0 < a0 + sa.nbytes() and sa.nbytes() > 0 and sb.nbytes() > 0


def _poison_allocator(ref: tuple, device: str) -> None:
    """Hand NaN-filled blocks of the outputs' sizes back to the caching allocator, so an
    output the model allocates and never writes reads NaN instead of an earlier answer."""
    import torch  # torch: 0.8 s to import; only once a kernel runs

    if not device.startswith("cuda"):
        return  # the CPU allocator does not cache blocks this way; outputs are fresh memory
    blocks = [torch.full(tuple(r.shape), float("nan"), device=device) for r in ref if isinstance(r, torch.Tensor)]
    del blocks


def same_results(p: Problem, *, fresh: int = 2) -> SameResults:
    """The same-results stage for a KernelBench pair."""
    res = SameResults()
    res.notes.extend(p.notes)
    p.notes = res.notes  # notes made while running land in the result
    dtype = p.dtype or "(get_inputs' dtype)"
    r = getattr(p.original, "ERROR_RATIO", None)
    ratio = RATIO if r is None else float(r)
    for s in (p.seed, p.seed + 1):
        why = REPEAT if s != p.seed else ""
        if not judge(res, p.run, p.model, p.model_new, Case("get_inputs()", {}, dtype, s), why, ratio):
            return res
    consts = p.constants()
    if not consts:
        res.notes.append("fresh shapes impossible: get_inputs reads no module-level int constant "
                         "(that get_init_inputs does not also read)")
        return res
    rng = random.Random(p.seed)

    for shape in fresh_shapes(consts, (), rng, fresh):
        case = Case("fresh", shape, dtype, p.seed + 7)
        try:
            ok = judge(res, p.run, p.model, p.model_new, case, "special-cased to the benchmark's shapes?", ratio)
        except Exception as e:  # noqa: BLE001 - Model cannot take the perturbed sizes
            res.notes.append(f"fresh shape {shape_label(shape)}: cannot run ({type(e).__name__}: {e})")
            continue
        if not ok:
            return res
    return res


def to_harness(p: Problem) -> tuple[Harness, Any, Any]:
    """The problem as a Harness with two launchers (each returns its outputs), for timing."""
    mod = ModuleType(f"kernelbench_{id(p):x}")
    dtype = p.dtype or "float32"
    mod.SHAPES = {"given": {}}  # type: ignore[attr-defined]
    mod.CPU_SHAPES = ("given",)  # type: ignore[attr-defined]
    mod.GPU_SHAPES = ("given",)  # type: ignore[attr-defined]  # KernelBench has one shape: time it
    mod.DTYPES = (dtype,)  # type: ignore[attr-defined]
    mod.TOLERANCES = {dtype: p.tolerance}  # type: ignore[attr-defined]
    mod.make_inputs = lambda shape, dt, seed, device: tuple(p.inputs(shape, seed))  # type: ignore[attr-defined]
    mod.make_outputs = lambda shape, dt, device: ()  # type: ignore[attr-defined]
    mod.reference = lambda *xs: p.reference(list(xs))  # type: ignore[attr-defined]
    h = Harness.from_module(mod, Path(p.original.__file__ or "kernelbench"))

    def call(model: Any) -> Any:
        import torch  # torch: 0.8 s to import; only once a kernel runs

        def launch(*xs: Any) -> Any:
            with torch.no_grad():  # as the results stage and KernelBench's own timing run it: no autograd graph
                return model(*xs)
        return launch

    return h, call(p.model), call(p.model_new)
