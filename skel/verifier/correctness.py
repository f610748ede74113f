"""Same results? One launcher against the harness's reference, output by output.

The rules that make a pass mean something:
- outputs are poisoned (NaN for floats, the dtype's max for integers) before every run, so
  an element the kernel never writes cannot pass;
- the reference runs on float64 copies of the float inputs, and outputs are compared in
  float64 with the caller's (atol, rtol): lowering precision beyond it fails;
- NaN or Inf in an output never passes, even where the reference has one too, unless the
  reference has the same non-finite value at the same place;
- inputs must be unchanged after the run (a kernel that writes into its inputs, or whose
  outputs alias them, fails);
- every input and output sits in a buffer with poisoned guard bands (``guards.py``): a write
  past a tensor's end changes a band and fails, naming the tensor and the offset; a read past
  an input's end reads NaN into an output, and reruns say which input and which side;
- error relative to the original: where the candidate's largest error (against the float64
  reference) is above a floor of a few ulps (``error_floor``), the original runs on the same
  inputs, and a candidate error ``RATIO`` (50) times the original's or more fails even inside
  the tolerance (a dropped term, a lowered precision the tolerance hides).

The stage (``same_results``) adds what defeats a candidate tuned to the check: several seeds
per shape run back to back (a result cached for repeated inputs, or work done only on the
first call, gives stale or poisoned outputs on the second), fresh shapes drawn by perturbing
the sizes not in ``FIXED`` (a candidate special-cased to the benchmark's shapes fails them),
the partitioned run against the whole (``split``), and error growth with ``LENGTH`` against
the float64 reference (a TF32 dot passes a short test and drifts over a long context).

A candidate failure is blamed on the candidate only if the original passes the same case:
where both fail (a fresh shape the problem does not allow, bf16 dots under the interpreter)
the case is inconclusive and said so; a stage where nothing was conclusive is an error.
"""

from __future__ import annotations

import math
import random
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from skel.verifier import guards
from skel.verifier.harness import Harness

#: a candidate whose error is this many times the original's (and above ``error_floor``) is wrong
RATIO = 50.0
#: the floor, in units of the output dtype's machine epsilon, before scaling
ULPS = 4


@dataclass
class OutputCheck:
    """How one output compared with the reference."""

    index: int
    max_abs_error: float  # over finite elements
    max_rel_error: float
    bad: int  # elements outside atol + rtol * |ref|, or non-finite where the reference is finite
    total: int
    atol: float
    rtol: float
    note: str = ""
    tol_ratio: float = 0.0  # worst |out - ref| / (atol + rtol * |ref|): <= 1 passes
    nonfinite: int = 0  # NaN/Inf where the reference is finite (poison left: never written?)
    scale: float = 0.0  # largest finite |reference|
    floor: float = 0.0  # error_floor: below it, no comparison with the original's error (0: none)

    @property
    def ok(self) -> bool:
        return self.bad == 0 and not self.note

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        what = f"output {self.index}" if self.index >= 0 else f"input {-1 - self.index}"
        if self.note:
            return f"{what}: {self.note}"
        nf = f", {self.nonfinite} NaN/Inf (never written?)" if self.nonfinite else ""
        return (f"{what}: {self.bad}/{self.total} elements wrong{nf} (max abs error over finite ones "
                f"{self.max_abs_error:.3g}, atol {self.atol:g}, rtol {self.rtol:g})")


def dtype_of(name: str) -> Any:
    import torch  # torch: 0.8 s to import; only once a kernel runs

    dt = getattr(torch, name, None)
    if not isinstance(dt, torch.dtype):
        raise ValueError(f"unknown torch dtype {name!r}")
    return dt


def poison(t: Any) -> None:
    import torch  # torch: 0.8 s to import; only once a kernel runs

    if t.dtype.is_floating_point or t.dtype.is_complex:
        t.fill_(float("nan"))
    elif t.dtype == torch.bool:
        t.fill_(True)
    else:
        t.fill_(torch.iinfo(t.dtype).max)


def fp64(x: Any) -> Any:
    import torch  # torch: 0.8 s to import; only once a kernel runs

    if isinstance(x, torch.Tensor) and x.dtype.is_floating_point:
        return x.detach().to(torch.float64)
    if isinstance(x, torch.Tensor):
        return x.detach().clone()
    return x



def compare(out: Any, ref: Any, atol: float, rtol: float, index: int) -> OutputCheck:
    import torch  # torch: 0.8 s to import; only once a kernel runs

    if not isinstance(out, torch.Tensor):
        return OutputCheck(index, float("inf"), float("inf"), 1, 1, atol, rtol,
                           note=f"not a tensor ({type(out).__name__})")
    if tuple(out.shape) != tuple(ref.shape):
        return OutputCheck(index, float("inf"), float("inf"), out.numel(), out.numel(), atol, rtol,
                           note=f"shape {tuple(out.shape)} != reference {tuple(ref.shape)}")
    # Compared where the output lives, a slice at a time: a CHECK_ONLY shape past 2**31
    # elements would need ~17 GB per float64 copy on the host, several times over.
    o_all = out.detach().reshape(-1)
    r_all = ref.detach().to(o_all.device).reshape(-1)
    n = o_all.numel()
    max_abs = max_rel = max_ratio = scale = 0.0
    bad_total = nonfinite_total = 0
    for start in range(0, n, _CHUNK):
        o = o_all[start:start + _CHUNK].to(torch.float64)
        r = r_all[start:start + _CHUNK].to(torch.float64)
        same_nonfinite = (~torch.isfinite(r)) & ((o == r) | (torch.isnan(o) & torch.isnan(r)))
        finite = torch.isfinite(o) & torch.isfinite(r)
        diff = torch.where(finite, (o - r).abs(), torch.zeros_like(o))
        bad = ~(finite & (diff <= atol + rtol * r.abs())) & ~same_nonfinite
        rel = torch.where(finite, diff / r.abs().clamp_min(1e-30), torch.zeros_like(o))
        ratio = diff / (atol + rtol * r.abs()).clamp_min(1e-300)
        nonfinite = int((~finite & ~same_nonfinite).sum())
        max_abs = max(max_abs, float(diff.max()))
        scale = max(scale, float(torch.where(torch.isfinite(r), r.abs(), torch.zeros_like(r)).max()))
        max_rel = max(max_rel, float(rel.max()))
        max_ratio = float("inf") if nonfinite else max(max_ratio, float(ratio.max()))
        bad_total += int(bad.sum())
        nonfinite_total += nonfinite
    return OutputCheck(index, max_abs, max_rel, bad_total, int(n), atol, rtol,
                       tol_ratio=float("inf") if nonfinite_total else max_ratio, nonfinite=nonfinite_total,
                       scale=scale)


_CHUNK = 1 << 26


class LaunchFailed(Exception):
    """The launcher under test raised: the candidate (or original) does not compile or run."""


def unchanged(x: Any, saved: Any) -> bool:
    import torch  # torch: 0.8 s to import; only once a kernel runs

    if not isinstance(x, torch.Tensor):
        return True
    if torch.equal(x, saved):
        return True
    if not (x.dtype.is_floating_point and x.shape == saved.shape and x.dtype == saved.dtype):
        return False
    # bit for bit, so a NaN left in place counts as unchanged; and no float op is needed,
    # which fp8 tensors lack (`nan_to_num`, `isfinite` are not implemented for them)
    bits = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[x.element_size()]
    return bool(torch.equal(x.contiguous().view(bits), saved.contiguous().view(bits)))


def error_floor(dtype: Any, length: int, scale: float) -> float:
    """The error below which a candidate is never compared with the original's error:
    ``ULPS`` ulps of the output dtype (its machine epsilon), times the square root of the
    reduction length (rounding errors of a sum of ``length`` terms grow about as its square
    root), times the output's largest |reference| (1 where that is 0). 0 for a non-float
    output, which the tolerance alone judges."""
    import torch  # torch: 0.8 s to import; only once a kernel runs

    if not getattr(dtype, "is_floating_point", False):
        return 0.0
    return ULPS * torch.finfo(dtype).eps * math.sqrt(max(1, length)) * (scale if scale > 0 else 1.0)


def reduction_length(inputs: Any, outputs: Any, flops: int | None = None) -> int:
    """How many terms go into one output element, estimated: the largest float input's
    elements per output element, or the harness's flops per output element where that is
    larger (a matmul: about 2K). At least 1."""
    import torch  # torch: 0.8 s to import; only once a kernel runs

    n_out = sum(o.numel() for o in outputs if isinstance(o, torch.Tensor)) or 1
    n_in = max((x.numel() for x in inputs if isinstance(x, torch.Tensor) and x.dtype.is_floating_point), default=0)
    per_out = max((n_in // o.numel() for o in outputs if isinstance(o, torch.Tensor) and o.numel()), default=1)
    return max(1, per_out, (flops or 0) // n_out)


def set_floors(checks: list[OutputCheck], outputs: Any, length: int) -> None:
    for c in checks:
        if 0 <= c.index < len(outputs) and not c.note:
            c.floor = error_floor(getattr(outputs[c.index], "dtype", None), length, c.scale)


def guard_checks(gin: dict[int, guards.Guarded], gout: dict[int, guards.Guarded], atol: float, rtol: float
                 ) -> list[OutputCheck]:
    """A failed check for every guarded tensor a kernel wrote outside of."""
    out = []
    for idx, g in [*((i, g) for i, g in gout.items()), *((-1 - i, g) for i, g in gin.items())]:
        why = guards.violation(g)
        if why:
            out.append(OutputCheck(idx, float("nan"), float("nan"), 1, 1, atol, rtol, note=why))
    return out


def unexpected_nonfinite(outputs: Any, ref: Any) -> int:
    """NaN/Inf output elements where the reference is finite."""
    import torch  # torch: 0.8 s to import; only once a kernel runs

    n = 0
    for o, r in zip(outputs, ref):
        if isinstance(o, torch.Tensor) and isinstance(r, torch.Tensor) and o.shape == r.shape:
            n += int((~torch.isfinite(o.detach().to(torch.float64)) & torch.isfinite(r.to(o.device))).sum())
    return n


def blame_reads(checks: list[OutputCheck], source: str) -> None:
    """Say on every output with unexpected NaN/Inf that they come from a read past an input."""
    for c in checks:
        if c.index >= 0 and c.nonfinite and not c.note:
            c.note = (f"{c.bad}/{c.total} elements wrong, {c.nonfinite} NaN where the reference has a number: "
                      f"{source}")


def run_and_check(h: Harness, launcher: Any, shape: dict[str, int], dtype_name: str, seed: int,
                  device: str, tolerance: tuple[float, float] | None = None) -> list[OutputCheck]:
    """Fresh inputs for (shape, dtype, seed), poisoned outputs, every tensor in a guarded
    buffer, one run, every output and every guard checked. An exception from the launcher
    leaves as ``LaunchFailed``; one from the harness as itself."""
    import torch  # torch: 0.8 s to import; only once a kernel runs

    dtype = dtype_of(dtype_name)
    atol, rtol = tolerance or h.tolerance(dtype_name)

    def launch(poisoned: Any = None) -> tuple[list, list, list, dict, dict]:
        inputs, gin = guards.guard_all(h.make_inputs(shape, dtype, seed, device), poisoned)
        saved = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
        outputs, gout = guards.guard_all(h.make_outputs(shape, dtype, device), role=1)
        for o in outputs:
            poison(o)
        try:
            launcher(*inputs, *outputs)
            if device.startswith("cuda"):
                torch.cuda.synchronize()
        except Exception as e:  # the code under test: any failure is its failure
            raise LaunchFailed(f"{type(e).__name__}: {' '.join(str(e).split())[:300]}") from e
        return inputs, saved, outputs, gin, gout

    inputs, saved, outputs, gin, gout = launch()
    ref = h.reference(*(fp64(x) for x in saved))
    checks = [compare(o, r, atol, rtol, i) for i, (o, r) in enumerate(zip(outputs, ref))]
    set_floors(checks, outputs, reduction_length(saved, outputs, h.flops(shape, dtype)))
    if len(ref) != len(outputs):
        checks.append(OutputCheck(len(outputs), float("inf"), float("inf"), 1, 1, atol, rtol,
                                  note=f"{len(outputs)} outputs but the reference gives {len(ref)}"))
    for i, (x, s) in enumerate(zip(inputs, saved)):
        if not unchanged(x, s):
            checks.append(OutputCheck(-1 - i, float("nan"), float("nan"), 1, 1, atol, rtol,
                                      note=f"input {i} was modified by the launcher"))
    checks.extend(guard_checks(gin, gout, atol, rtol))
    if gin and any(c.nonfinite for c in checks if c.index >= 0):
        def count(poisoned: Any) -> int:
            _, _, outs, _, _ = launch(poisoned)
            return unexpected_nonfinite(outs, ref)

        try:
            source = guards.nan_source(count, sorted(gin))
        except LaunchFailed:
            source = ""
        if source:
            blame_reads(checks, source)
    return checks


# --- the stage ---------------------------------------------------------------------------

def shape_label(shape: dict[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in shape.items())


@dataclass
class Case:
    """One run to check: a shape (named, or fresh), a dtype and a seed."""

    name: str  # "tiny", "fresh from tiny", "split", "length x4"
    shape: dict[str, int]
    dtype: str
    seed: int

    @property
    def label(self) -> str:
        shape = f" [{shape_label(self.shape)}]" if self.shape else ""
        return f"{self.name}{shape} {self.dtype} seed {self.seed}"


@dataclass
class SameResults:
    """What the same-results stage found."""

    verdict: str | None = None  # "wrong" | "failed" | None (passed)
    detail: str = ""
    checked: list[str] = field(default_factory=list)  # case labels that passed
    inconclusive: list[str] = field(default_factory=list)  # cases the original fails too
    notes: list[str] = field(default_factory=list)
    max_error: dict[str, float] = field(default_factory=dict)  # per output, worst over passing cases
    shapes: list[str] = field(default_factory=list)
    dtypes: list[str] = field(default_factory=list)

    def absorb(self, case: Case, checks: list[OutputCheck]) -> None:
        self.checked.append(case.label)
        if shape_label(case.shape) not in self.shapes:
            self.shapes.append(shape_label(case.shape))
        if case.dtype not in self.dtypes:
            self.dtypes.append(case.dtype)
        for c in checks:
            if c.index >= 0:
                key = f"out{c.index}"
                self.max_error[key] = max(self.max_error.get(key, 0.0), c.max_abs_error)


#: run(launcher, case) -> the checks; raises LaunchFailed when the launcher raises
Runner = Callable[[Any, Case], list[OutputCheck]]


def _num(x: float) -> str:
    """3.1, 0.05, 1.2e-4: two significant digits, exponents without padding."""
    if x != 0 and math.isfinite(x) and (abs(x) < 1e-2 or abs(x) >= 1e4):
        m, e = f"{x:.1e}".split("e")
        return f"{m}e{int(e)}"
    return f"{x:.2g}"


def far_from_original(run: Runner, orig: Any, case: Case, checks: list[OutputCheck], ratio: float) -> str:
    """Why the candidate's error, inside the tolerance, is wrong next to the original's on the
    same inputs, or "". The original runs only where an output's error is above its floor."""
    suspects = [c for c in checks if c.index >= 0 and c.floor > 0 and c.max_abs_error > c.floor]
    if not ratio or not suspects:
        return ""
    try:
        orig_checks = run(orig, case)
    except LaunchFailed:
        return ""
    theirs: dict[int, OutputCheck] = {}
    for c in orig_checks:
        theirs.setdefault(c.index, c)
    for c in suspects:
        o = theirs.get(c.index)
        if o is None or not o.ok:
            continue  # the original is not right here either: nothing to compare with
        if c.max_abs_error >= ratio * o.max_abs_error:
            times = (f"{float(f'{c.max_abs_error / o.max_abs_error:.3g}'):,.0f}x" if o.max_abs_error > 0
                     else "the original is exact")
            return (f"error {_num(c.max_abs_error)} vs the original's {_num(o.max_abs_error)} ({times}) on output "
                    f"{c.index} — inside the tolerance (atol {c.atol:g}, rtol {c.rtol:g}), but {ratio:g}x the "
                    f"original's error or more, above the floor {_num(c.floor)}: a dropped or extra term, or "
                    f"lowered precision?")
    return ""


def judge(res: SameResults, run: Runner, orig: Any, cand: Any, case: Case, why: str = "",
          ratio: float = RATIO) -> bool:
    """Run the candidate on one case; on a failure, run the original on the same case to
    decide whose it is. A candidate inside the tolerance whose error is ``ratio`` times the
    original's (above its floor) is wrong too. False when the candidate is to blame (``res``
    says why)."""
    try:
        checks = run(cand, case)
        bad = [c for c in checks if not c.ok]
        failure = "; ".join(c.describe() for c in bad[:3])
        raised = False
    except LaunchFailed as e:
        checks, failure, raised = [], f"raised {e}", True
    if not raised and not bad:
        far = far_from_original(run, orig, case, checks, ratio)
        if far:
            res.verdict, res.detail = "wrong", f"{case.label}: {far}"
            return False
        res.absorb(case, checks)
        return True
    try:
        orig_ok = all(c.ok for c in run(orig, case))
    except LaunchFailed:
        orig_ok = False
    if not orig_ok:
        res.inconclusive.append(f"{case.label}: the original fails too ({failure})")
        return True
    res.verdict = "failed" if raised else "wrong"
    res.detail = f"{case.label}: {failure}" + (f" — {why}" if why else "")
    return False


REPEAT = "right on the first call, wrong on the second: a cached result, or work done only on the first call?"


def fresh_shapes(shape: dict[str, int], fixed: tuple[str, ...], rng: random.Random, n: int) -> list[dict[str, int]]:
    """``n`` shapes near ``shape``: every size not in ``fixed`` moved by a small random
    amount, up in the first shape and down in the second (a size baked into a candidate
    shows going up; an unguarded read past the end, going down), then either way."""
    out = []
    for i in range(n):
        new = {}
        for k, v in shape.items():
            if k in fixed or not isinstance(v, int) or isinstance(v, bool):
                new[k] = v
                continue
            step = max(1, min(v // 16, 7))
            sign = 1 if i == 0 else -1 if i == 1 else rng.choice((-1, 1))
            cand = v + sign * rng.randint(1, step)
            new[k] = cand if cand >= 1 else v + rng.randint(1, step)
        if new != shape and new not in out:
            out.append(new)
    return out


def same_results(h: Harness, orig: Any, cand: Any, *, shape_names: list[str], dtypes: list[str], seed: int,
                 device: str, tolerance: tuple[float, float] | None = None, fresh: int = 1) -> SameResults:
    """The same-results stage for a harness-format pair (see the module docstring)."""
    res = SameResults()
    ratio = RATIO if h.error_ratio is None else h.error_ratio

    def run(launcher: Any, case: Case) -> list[OutputCheck]:
        return run_and_check(h, launcher, case.shape, case.dtype, case.seed, device, tolerance)

    # named shapes, two seeds each, back to back: caches and first-call-only work fail the second
    for name in shape_names:
        for dt in dtypes:
            for s in (seed, seed + 1):
                if not judge(res, run, orig, cand, Case(name, h.shapes[name], dt, s), REPEAT if s != seed else "",
                             ratio):
                    return res
    # fresh shapes, against special-casing
    rng = random.Random(seed)
    fixed = h.fixed
    for name in shape_names:
        for shape in fresh_shapes(h.shapes[name], fixed, rng, fresh):
            case = Case(f"fresh from {name}", shape, dtypes[0], seed + 7)
            try:
                ok = judge(res, run, orig, cand, case, "special-cased to the benchmark's shapes?", ratio)
            except Exception as e:  # noqa: BLE001 - the harness rejects the shape: say so, go on
                res.notes.append(f"fresh shape {shape_label(shape)}: the harness cannot make it "
                                 f"({type(e).__name__}: {e}); declare the size in FIXED")
                continue
            if not ok:
                return res
    if not any(c.startswith("fresh") for c in res.checked):
        res.notes.append("no fresh shape was checked (every size is FIXED, or the original fails them)")
    if h.split is not None and shape_names:
        if not check_split(res, h, orig, cand, Case("split", h.shapes[shape_names[0]], dtypes[0], seed), device,
                           tolerance, ratio):
            return res
    if h.length and shape_names:
        if not check_growth(res, h, orig, cand, h.shapes[shape_names[0]], dtypes[0], seed, device, tolerance):
            return res
    return res


# --- partitioned against whole -----------------------------------------------------------

def _split_run(h: Harness, launcher: Any, case: Case, device: str,
               tolerance: tuple[float, float] | None) -> list[OutputCheck]:
    """The launcher on each part in order (views of one problem), compared with the whole
    problem's reference and with the launcher's own whole run."""
    import torch  # torch: 0.8 s to import; only once a kernel runs

    dtype = dtype_of(case.dtype)
    atol, rtol = tolerance or h.tolerance(case.dtype)
    inputs, gin = guards.guard_all(h.make_inputs(case.shape, dtype, case.seed, device))
    whole_in = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
    saved = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
    whole_out = h.make_outputs(case.shape, dtype, device)
    parts_out, gout = guards.guard_all(h.make_outputs(case.shape, dtype, device), role=1)
    for o in (*whole_out, *parts_out):
        poison(o)
    assert h.split is not None
    try:
        launcher(*whole_in, *whole_out)
        for part_in, part_out in h.split(tuple(inputs), tuple(parts_out)):
            launcher(*part_in, *part_out)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
    except Exception as e:  # the code under test
        raise LaunchFailed(f"{type(e).__name__}: {e}") from e
    ref = h.reference(*(fp64(x) for x in saved))
    checks = [compare(o, r, atol, rtol, i) for i, (o, r) in enumerate(zip(parts_out, ref))]
    set_floors(checks, parts_out, reduction_length(saved, parts_out, h.flops(case.shape, dtype)))
    checks.extend(guard_checks(gin, gout, atol, rtol))
    for i, (p, w) in enumerate(zip(parts_out, whole_out)):
        c = compare(p, w, atol, rtol, i)
        if not c.ok:
            c.note = c.note or f"partitioned run differs from the whole run ({c.bad}/{c.total} elements)"
            checks.append(c)
    return checks


def check_split(res: SameResults, h: Harness, orig: Any, cand: Any, case: Case, device: str,
                tolerance: tuple[float, float] | None, ratio: float = RATIO) -> bool:
    def run(launcher: Any, c: Case) -> list[OutputCheck]:
        return _split_run(h, launcher, c, device, tolerance)

    return judge(res, run, orig, cand, case, "the partitioned run does not match the whole", ratio)


# --- error growth with length ------------------------------------------------------------

@dataclass
class Growth:
    lengths: list[int]
    original: list[float]  # worst error in tolerance units (<= 1 passes) per length
    candidate: list[float]

    def verdict(self) -> str | None:
        """Why the candidate's error growth is a failure, or None. It fails when its error
        at the longest length is beyond the tolerance, or is both well above the original's
        (4x, and at least 5 % of the tolerance) and grows at least twice as fast."""
        c0, c1 = self.candidate[0], self.candidate[-1]
        o0, o1 = self.original[0], self.original[-1]
        if c1 > 1 and o1 <= 1:
            return f"beyond the tolerance at length {self.lengths[-1]} ({c1:.3g}x the tolerance)"
        grow_c, grow_o = c1 / max(c0, 1e-6), o1 / max(o0, 1e-6)
        if c1 >= 0.05 and c1 > 4 * o1 and grow_c > 2 * grow_o:
            return (f"error grows {grow_c:.3g}x from length {self.lengths[0]} to {self.lengths[-1]} "
                    f"(the original's {grow_o:.3g}x): {c1:.3g} vs {o1:.3g} of the tolerance")
        return None

    def describe(self) -> str:
        pairs = ", ".join(f"{n}: {c:.2g} vs {o:.2g}" for n, c, o in zip(self.lengths, self.candidate, self.original))
        return f"error in tolerance units by length (candidate vs original): {pairs}"


def check_growth(res: SameResults, h: Harness, orig: Any, cand: Any, shape: dict[str, int], dtype: str, seed: int,
                 device: str, tolerance: tuple[float, float] | None) -> bool:
    """Run both sides at 1x, 2x, 4x the shape's LENGTH and compare their error growth."""
    key = h.length
    assert key is not None
    if key not in shape:
        res.notes.append(f"LENGTH {key!r} is not a size of the shape: error growth not checked")
        return True
    lengths = [shape[key] * f for f in (1, 2, 4)]
    g = Growth(lengths, [], [])
    for n in lengths:
        case = Case(f"length {key}={n}", {**shape, key: n}, dtype, seed)
        for side, fn in (("original", orig), ("candidate", cand)):
            try:
                checks = run_and_check(h, fn, case.shape, dtype, seed, device, tolerance)
            except LaunchFailed as e:
                if side == "original":
                    res.notes.append(f"error growth not checked: the original raised at {case.label}: {e}")
                    return True
                res.verdict, res.detail = "failed", f"{case.label}: raised {e}"
                return False
            bad = [c for c in checks if c.note]
            if bad:
                if side == "original":
                    res.notes.append(f"error growth not checked: the original fails at {case.label}")
                    return True
                res.verdict, res.detail = "wrong", f"{case.label}: {bad[0].describe()}"
                return False
            worst = max((c.tol_ratio for c in checks), default=0.0)
            (g.original if side == "original" else g.candidate).append(worst)
    res.notes.append(g.describe())
    why = g.verdict()
    if why:
        res.verdict, res.detail = "wrong", f"error growth with {key}: {why} (lowered precision?)"
        return False
    res.checked.append(f"error growth over {key}={lengths}")
    return True
