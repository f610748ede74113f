"""Same results? One launcher against the harness's reference, output by output.

The rules that make a pass mean something:
- outputs are poisoned (NaN for floats, the dtype's max for integers) before every run, so
  an element the kernel never writes cannot pass;
- the reference runs on float64 copies of the float inputs, and outputs are compared in
  float64 with the caller's (atol, rtol): lowering precision beyond it fails;
- NaN or Inf in an output never passes, even where the reference has one too, unless the
  reference has the same non-finite value at the same place;
- inputs must be unchanged after the run (a kernel that writes into its inputs, or whose
  outputs alias them, fails).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from skel.verifier.harness import Harness


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

    @property
    def ok(self) -> bool:
        return self.bad == 0 and not self.note

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def dtype_of(name: str) -> Any:
    import torch

    dt = getattr(torch, name, None)
    if not isinstance(dt, torch.dtype):
        raise ValueError(f"unknown torch dtype {name!r}")
    return dt


def poison(t: Any) -> None:
    import torch

    if t.dtype.is_floating_point or t.dtype.is_complex:
        t.fill_(float("nan"))
    elif t.dtype == torch.bool:
        t.fill_(True)
    else:
        t.fill_(torch.iinfo(t.dtype).max)


def _fp64(x: Any) -> Any:
    import torch

    if isinstance(x, torch.Tensor) and x.dtype.is_floating_point:
        return x.detach().to(torch.float64)
    if isinstance(x, torch.Tensor):
        return x.detach().clone()
    return x


def compare(out: Any, ref: Any, atol: float, rtol: float, index: int) -> OutputCheck:
    import torch

    if tuple(out.shape) != tuple(ref.shape):
        return OutputCheck(index, float("inf"), float("inf"), out.numel(), out.numel(), atol, rtol,
                           note=f"shape {tuple(out.shape)} != reference {tuple(ref.shape)}")
    o = out.detach().to("cpu", torch.float64)
    r = ref.detach().to("cpu", torch.float64)
    same_nonfinite = (~torch.isfinite(r)) & ((o == r) | (torch.isnan(o) & torch.isnan(r)))
    finite = torch.isfinite(o) & torch.isfinite(r)
    diff = torch.where(finite, (o - r).abs(), torch.zeros_like(o))
    bad = ~(finite & (diff <= atol + rtol * r.abs())) & ~same_nonfinite
    rel = diff / r.abs().clamp_min(1e-30)
    return OutputCheck(index, float(diff.max()) if o.numel() else 0.0,
                       float(torch.where(finite, rel, torch.zeros_like(rel)).max()) if o.numel() else 0.0,
                       int(bad.sum()), int(o.numel()), atol, rtol)


def run_and_check(h: Harness, launcher: Any, shape: dict[str, int], dtype_name: str, seed: int,
                  device: str) -> list[OutputCheck]:
    """Fresh inputs for (shape, dtype, seed), poisoned outputs, one run, every output checked."""
    import torch

    dtype = dtype_of(dtype_name)
    atol, rtol = h.tolerance(dtype_name)
    inputs = h.make_inputs(shape, dtype, seed, device)
    saved = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
    outputs = h.make_outputs(shape, dtype, device)
    for o in outputs:
        poison(o)
    launcher(*inputs, *outputs)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    ref = h.reference(*(_fp64(x) for x in saved))
    checks = [compare(o, r, atol, rtol, i) for i, (o, r) in enumerate(zip(outputs, ref))]
    if len(ref) != len(outputs):
        checks.append(OutputCheck(len(outputs), float("inf"), float("inf"), 1, 1, atol, rtol,
                                  note=f"{len(outputs)} outputs but the reference gives {len(ref)}"))
    for i, (x, s) in enumerate(zip(inputs, saved)):
        if isinstance(x, torch.Tensor) and not torch.equal(x, s) and not (
                x.dtype.is_floating_point and torch.equal(torch.isnan(x), torch.isnan(s))
                and torch.equal(torch.nan_to_num(x), torch.nan_to_num(s))):
            checks.append(OutputCheck(-1 - i, float("nan"), float("nan"), 1, 1, atol, rtol,
                                      note=f"input {i} was modified by the launcher"))
    return checks
