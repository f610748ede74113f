"""Device facts for a Verification record, known peaks for the roofline, and an offline target.

Why here: every timed number is only meaningful next to the machine it came from (name,
compute capability, torch/Triton/driver versions), and the roofline check needs the machine's
peaks. Peaks come from a table of vendor figures (dense, no sparsity); a measured copy
bandwidth can only *raise* the bandwidth used, so the roofline never rejects a run because our
own measurement was low.

:func:`offline_cuda` lets Triton compile for sm_90 on a machine with no GPU (a stand-in driver
that answers "device 0, CUDA target 9.0"), so machine code can be compared on the CPU. It lives
in :mod:`skel.kernels.offline` (the machine-code facts need it too) and is re-exported here.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any

from skel.kernels.offline import offline_cuda  # noqa: F401  (moved down to the analysis layer; re-exported)


@dataclass(frozen=True)
class Peaks:
    """Dense peak rates of one GPU: bytes/s of HBM and FLOP/s per math kind."""

    hbm_bps: float
    flops: dict[str, float]  # "bf16", "fp16", "tf32", "fp32", "fp8"

    def flops_for(self, dtype: str) -> float:
        """The most FLOP/s a kernel on ``dtype`` inputs could reach (generous: tf32 for fp32 dots)."""
        kind = {"bfloat16": "bf16", "float16": "fp16", "float32": "tf32", "float64": "fp64",
                "float8_e4m3fn": "fp8", "float8_e5m2": "fp8", "int8": "fp8"}.get(dtype, "fp8")
        return self.flops.get(kind) or max(self.flops.values())


_T = 1e12
#: Vendor figures (SXM parts, dense). Matched by substring of the device name, first match wins.
KNOWN_PEAKS: tuple[tuple[str, Peaks], ...] = (
    ("H200", Peaks(4.8e12, {"bf16": 989 * _T, "fp16": 989 * _T, "tf32": 495 * _T, "fp32": 67 * _T,
                            "fp64": 67 * _T, "fp8": 1979 * _T})),
    ("H100", Peaks(3.35e12, {"bf16": 989 * _T, "fp16": 989 * _T, "tf32": 495 * _T, "fp32": 67 * _T,
                             "fp64": 67 * _T, "fp8": 1979 * _T})),
    ("A100", Peaks(2.0e12, {"bf16": 312 * _T, "fp16": 312 * _T, "tf32": 156 * _T, "fp32": 19.5 * _T,
                            "fp64": 19.5 * _T, "fp8": 624 * _T})),
)


def known_peaks(name: str) -> Peaks | None:
    for key, peaks in KNOWN_PEAKS:
        if key.lower() in name.lower():
            return peaks
    return None


def _nvidia_smi_driver() -> str | None:
    exe = shutil.which("nvidia-smi")
    if not exe:
        return None
    try:
        out = subprocess.run([exe, "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    line = out.stdout.strip().splitlines()
    return line[0].strip() if out.returncode == 0 and line else None


def device_facts(device: str) -> dict[str, Any]:
    """The fields of a Verification record that say where it ran."""
    import torch  # torch: 0.8 s to import; only once a kernel runs

    try:
        import triton  # triton: optional (the verify extra), 0.1 s to import

        triton_version: str | None = triton.__version__
    except ImportError:
        triton_version = None
    facts: dict[str, Any] = {"torch": torch.__version__, "triton": triton_version}
    if not device.startswith("cuda"):
        interp = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")
        facts.update(device="cpu (TRITON_INTERPRET=1)" if interp else "cpu", cc=None, backend="cpu", driver=None)
        return facts
    if not torch.cuda.is_available():
        raise RuntimeError("device 'cuda' asked for, but torch sees no GPU")
    idx = torch.device(device).index or 0
    major, minor = torch.cuda.get_device_capability(idx)
    driver = _nvidia_smi_driver()
    if driver is None:
        with contextlib.suppress(Exception):
            v = int(torch._C._cuda_getDriverVersion())  # type: ignore[attr-defined]  # e.g. 12040
            driver = f"cuda {v // 1000}.{(v % 1000) // 10}"
    facts.update(device=torch.cuda.get_device_name(idx), cc=major * 10 + minor,
                 backend="rocm" if getattr(torch.version, "hip", None) else "cuda", driver=driver)
    return facts


def measure_copy_bandwidth(device: str = "cuda", nbytes: int = 1 << 30, reps: int = 10) -> float:
    """Bytes/s of a device-to-device copy (read + write counted), best of ``reps``."""
    import torch  # torch: 0.8 s to import; only once a kernel runs

    src = torch.empty(nbytes // 4, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    dst.copy_(src)
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        dst.copy_(src)
        e.record()
        e.synchronize()
        best = min(best, s.elapsed_time(e) / 1e3)
    del src, dst
    return 2 * nbytes / best


def peaks_for(device: str, measured_bw: float | None = None) -> Peaks | None:
    """The table's peaks for this device, bandwidth raised to ``measured_bw`` if that is higher."""
    import torch  # torch: 0.8 s to import; only once a kernel runs

    name = torch.cuda.get_device_name(torch.device(device).index or 0)
    peaks = known_peaks(name)
    if peaks is None:
        return None
    if measured_bw and measured_bw > peaks.hbm_bps:
        return Peaks(measured_bw, dict(peaks.flops))
    return peaks
