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
the float64 reference (a TF32 dot passes a short test and drifts over a long context). Then,
once per run: a replay (two calls back to back whose inputs differ only in their middle: an
answer cached on a weak fingerprint is stale), large values (float inputs scaled to |x| <=
``LARGE``: NaN/Inf where the original stays finite is a numerically unsafe shortcut), and one
wide shape per unfixed size (past the next power of two of ``WIDE`` times the CPU shape's: a
block or table sized for the small shapes truncates). Whether the candidate launches a kernel
at all, and whether it left the checker alone, is ``integrity.py``'s (the run wraps this stage).

A candidate failure is blamed on the candidate only if the original passes the same case:
where both fail (a fresh shape the problem does not allow, bf16 dots under the interpreter)
the case is inconclusive and said so; a stage where nothing was conclusive is an error.
"""

from __future__ import annotations

import math
import random
import warnings
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
                  device: str, tolerance: tuple[float, float] | None = None,
                  transform: Callable[[list], list] | None = None, find_reads: bool = True) -> list[OutputCheck]:
    """Fresh inputs for (shape, dtype, seed), poisoned outputs, every tensor in a guarded
    buffer, one run, every output and every guard checked. An exception from the launcher
    leaves as ``LaunchFailed``; one from the harness as itself. ``transform`` changes the
    harness's inputs (in place) before the run: larger values, a changed interior.
    ``find_reads``: where an output has NaN the reference does not, rerun with the guard bands
    changed to say which input was read past (off where NaN from overflow is expected)."""
    import torch  # torch: 0.8 s to import; only once a kernel runs

    dtype = dtype_of(dtype_name)
    atol, rtol = tolerance or h.tolerance(dtype_name)

    def launch(poisoned: Any = None) -> tuple[list, list, list, dict, dict]:
        made = list(h.make_inputs(shape, dtype, seed, device))
        if transform is not None:
            made = transform(made)
        inputs, gin = guards.guard_all(made, poisoned)
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
    if find_reads and gin and any(c.nonfinite for c in checks if c.index >= 0):
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
    transform: Callable[[list], list] | None = None  # the inputs changed before the run (run_and_check)
    find_reads: bool = True  # NaN in an output: rerun to find a read past an input (run_and_check)

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
        return run_and_check(h, launcher, case.shape, case.dtype, case.seed, device, tolerance, case.transform,
                             case.find_reads)

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
    if shape_names:
        first = Case(shape_names[0], h.shapes[shape_names[0]], dtypes[0], seed)
        if not check_replay(res, h, run, orig, cand, first, device, ratio):
            return res
        if not check_large_values(res, run, orig, cand, first, ratio):
            return res
    cpu = [n for n in shape_names if n in h.cpu_shapes]

    def cost(shape: dict[str, int]) -> float | None:
        try:
            return float(h.flops(shape, dtype_of(dtypes[0])) or h.bytes_moved(shape, dtype_of(dtypes[0])) or 0) or None
        except Exception:  # noqa: BLE001 - a roofline term that cannot take the shape: no bound from it
            return None

    for name, key, shape in wide_shapes({n: h.shapes[n] for n in cpu}, fixed, cost):
        case = Case(f"wide {key} from {name}", shape, dtypes[0], seed + 11)
        try:
            ok = judge(res, run, orig, cand, case, f"a block, grid or table sized for the small shapes? ({key} "
                       f"{h.shapes[name][key]} -> {shape[key]})", ratio)
        except Exception as e:  # noqa: BLE001 - the harness rejects the shape: say so, go on
            res.notes.append(f"wide shape {shape_label(shape)}: the harness cannot make it ({type(e).__name__}: "
                             f"{e}); declare the size in FIXED")
            continue
        if not ok:
            return res
    return res


# --- sizes well past the CPU shapes ------------------------------------------------------------

#: a wide shape's size: past the next power of two of this many times the CPU shape's size
WIDE = 8
#: at most this many times the small shape's flops (or bytes moved): a size whose cost grows
#: faster than linearly (attention's sequence length) is grown less, to no less than past the
#: next power of two of twice it
WIDE_COST = 16


def wide_size(v: int) -> int:
    """Past the next power of two of ``WIDE`` times ``v`` (at most 16x), by one: a block, grid
    or table sized for the small shape no longer covers it, and the last block is one element."""
    return min(1 << (WIDE * v - 1).bit_length(), 2 * WIDE * v) + 1


def wide_shapes(shapes: dict[str, dict[str, int]], fixed: tuple[str, ...],
                cost: Callable[[dict[str, int]], float | None] | None = None) -> list[tuple[str, str, dict[str, int]]]:
    """(the shape it comes from, the size grown, the shape) per size not in ``fixed``: that size
    grown to :func:`wide_size` of its largest value over ``shapes``, every other unfixed size
    cut to a quarter (at least 1), so a probe costs a few times the small shape under the
    interpreter, not tens; where ``cost`` (the harness's flops) says more than ``WIDE_COST``
    times the small shape's, the size is halved towards past the next power of two of twice it."""
    out: list[tuple[str, str, dict[str, int]]] = []
    keys = dict.fromkeys(k for sh in shapes.values() for k, v in sh.items()
                         if k not in fixed and isinstance(v, int) and not isinstance(v, bool) and v > 0)
    for key in keys:
        name = max((n for n in shapes if isinstance(shapes[n].get(key), int)), key=lambda n: shapes[n][key])
        base = shapes[name]
        new = {k: (wide_size(v) if k == key else max(1, (v + 3) // 4))
               if k in keys and isinstance(v, int) and not isinstance(v, bool) and v > 0 else v
               for k, v in base.items()}
        was = cost(base) if cost is not None else None
        floor = 1 << (2 * base[key] - 1).bit_length()
        while cost is not None and was and new[key] - 1 > floor and (cost(new) or 0) > WIDE_COST * was:
            new[key] = (new[key] - 1) // 2 + 1
        if all(new != s for _, _, s in out):
            out.append((name, key, new))
    return out


# --- a replayed answer: the inputs' ends kept, the interior changed ----------------------------

REPLAY = ("the inputs' first and last elements were the previous call's, their interior new: an answer cached "
          "on a weak fingerprint of the inputs?")


def interior_from(h: Harness, shape: dict[str, int], dtype: str, seed: int, device: str
                  ) -> Callable[[list], list]:
    """A transform: every float input's middle half (in element order) replaced by that of the
    inputs for ``seed``; its first and last quarters, and every other input, kept."""
    def change(xs: list) -> list:
        import torch  # torch: 0.8 s to import; only once a kernel runs

        others = h.make_inputs(shape, dtype_of(dtype), seed, device)
        with torch.no_grad():
            for x, y in zip(xs, others):
                if not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) and x.dtype.is_floating_point
                        and x.shape == y.shape and x.dtype == y.dtype and x.numel() >= 3):
                    continue
                flat, src = x.flatten().clone(), y.flatten()
                a, b = flat.numel() // 4 or 1, flat.numel() - (flat.numel() // 4 or 1)
                flat[a:b] = src[a:b]
                x.copy_(flat.view(x.shape))
        return xs

    return change


def check_replay(res: SameResults, h: Harness, run: Runner, orig: Any, cand: Any, first: Case, device: str,
                 ratio: float) -> bool:
    """Two calls back to back on inputs that differ only inside (same shape, same first and last
    elements, a changed middle): a cache keyed on the shape and a few elements replays."""
    a = Case(f"replay from {first.name}", first.shape, first.dtype, first.seed + 5)
    b = Case(f"replay from {first.name}, interior changed", first.shape, first.dtype, first.seed + 5,
             interior_from(h, first.shape, first.dtype, first.seed + 6, device))
    return judge(res, run, orig, cand, a, REPEAT, ratio) and judge(res, run, orig, cand, b, REPLAY, ratio)


# --- large values: where floating-point range matters ------------------------------------------

#: the largest |value| of every float input in the large-values case: past ~88 a logit overflows
#: exp in float32 unless the maximum is subtracted first, and at a tenth of this (the other
#: sign's extreme of a symmetric draw) it still does
LARGE = 1000.0


def scaled_to(limit: float) -> Callable[[list], list]:
    """A transform: every float input scaled (in place) so that its largest |value| is
    ``limit``, or a sixteenth of its dtype's largest finite value where that is less."""
    def scale(xs: list) -> list:
        import torch  # torch: 0.8 s to import; only once a kernel runs

        with torch.no_grad():
            for x in xs:
                if not (isinstance(x, torch.Tensor) and x.dtype.is_floating_point and x.numel()):
                    continue
                top = float(x.detach().to(torch.float64).abs().max())
                if top > 0 and math.isfinite(top):
                    x.copy_((x.to(torch.float64) * (min(limit, torch.finfo(x.dtype).max / 16) / top)).to(x.dtype))
        return xs

    return scale


def check_large_values(res: SameResults, run: Runner, orig: Any, cand: Any, first: Case, ratio: float) -> bool:
    """Both sides on the first case's inputs scaled to |x| <= ``LARGE``. The candidate is wrong
    only where the original is right there and the candidate has NaN/Inf where the reference is
    finite, or an error ``ratio`` times the original's (above its floor): a numerically unsafe
    shortcut (no max subtraction, a sum of squares in half precision). Anything else, a miss
    both make or an error inside the tolerance's reach of the original's, passes."""
    case = Case(f"large values (|x| <= {LARGE:g}) from {first.name}", first.shape, first.dtype, first.seed + 3,
                scaled_to(LARGE), find_reads=False)
    with warnings.catch_warnings():  # overflow in the interpreter's numpy is what this case looks for
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            mine = run(cand, case)
        except LaunchFailed as e:
            mine, raised = [], str(e)
        else:
            raised = ""
        try:
            theirs = run(orig, case)
        except LaunchFailed:
            res.notes.append(f"{case.label}: the original raises; not checked")
            return True
    if not all(c.ok for c in theirs):  # the problem does not allow such values (a float16 matmul overflows)
        res.notes.append(f"{case.label}: not checked, the original fails there too")
        return True
    if raised:
        res.verdict, res.detail = "failed", f"{case.label}: raised {raised}"
        return False
    by_index = {c.index: c for c in theirs}
    for c in mine:
        o = by_index.get(c.index)
        if c.note and not c.nonfinite:  # a guard band, a modified input, a wrong shape: never the values' fault
            res.verdict, res.detail = "wrong", f"{case.label}: {c.describe()}"
            return False
        if c.index < 0 or o is None:
            continue
        if c.nonfinite:
            res.verdict, res.detail = "wrong", (
                f"{case.label}: output {c.index}: {c.nonfinite}/{c.total} elements NaN/Inf where the reference and "
                f"the original are finite: numerically unsafe for large inputs (an overflow the original avoids?)")
            return False
        if c.floor > 0 and c.max_abs_error > c.floor and ratio and c.max_abs_error >= ratio * o.max_abs_error \
                and (not c.ok or o.max_abs_error > 0):
            res.verdict, res.detail = "wrong", (
                f"{case.label}: error {_num(c.max_abs_error)} vs the original's {_num(o.max_abs_error)} on output "
                f"{c.index} (atol {c.atol:g}, rtol {c.rtol:g}): numerically unsafe for large inputs?")
            return False
    res.checked.append(case.label)  # its errors scale with the inputs: not the run's max error
    return True


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
