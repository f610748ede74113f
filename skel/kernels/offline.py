"""Compiling Triton for a GPU this machine does not have, and machine code made comparable.

Why here: both the verifier (is a candidate a no-op?) and the machine-code facts
(:mod:`skel.kernels.machine`) compile on the CPU for sm_90; the analysis layer is the lower
of the two, so the stand-in driver and the normalisation live here and
:mod:`skel.verifier.gpu` / :mod:`skel.verifier.applied` re-export them.

- :func:`offline_cuda`: within, Triton's JIT believes device 0 is a CUDA target of the
  given compute capability (Triton ships ptxas and nvdisasm, so compiling needs no CUDA
  install); any other driver call fails loudly, so a launch attempted offline cannot pretend
  to have run.
- :func:`normalise`: machine code (PTX or SASS) with what differs between equal kernels
  removed: kernel names, comments, line and debug information.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any, Iterator


#: What ``driver.active.utils.get_device_properties`` answers offline, per compute capability
#: (the SXM part of each generation; the keys are Triton's).
DEVICE_PROPERTIES: dict[int, dict[str, Any]] = {
    80: {"name": "NVIDIA A100-SXM4-80GB", "max_shared_mem": 166912, "max_num_regs": 65536,
         "multiprocessor_count": 108, "warpSize": 32, "sm_clock_rate": 1410000, "mem_clock_rate": 1593000,
         "mem_bus_width": 5120},
    90: {"name": "NVIDIA H100 80GB HBM3", "max_shared_mem": 232448, "max_num_regs": 65536,
         "multiprocessor_count": 132, "warpSize": 32, "sm_clock_rate": 1980000, "mem_clock_rate": 2619000,
         "mem_bus_width": 5120},
}


class _OfflineUtils:
    def __init__(self, props: dict[str, Any]) -> None:
        self.props = props

    def get_device_properties(self, device: int = 0) -> dict[str, Any]:
        return dict(self.props)

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"offline Triton driver: utils.{name!r} needs a real GPU")


class _OfflineDriver:
    """Answers the three questions Triton's JIT asks before compiling (and, where asked for,
    the device's properties); anything else is an error (so a launch attempted offline fails
    loudly instead of pretending to run)."""

    def __init__(self, cc: int, warp_size: int, properties: bool = False) -> None:
        from triton.backends.compiler import GPUTarget  # triton: optional (the verify extra), 0.1 s to import

        self.target = GPUTarget("cuda", cc, warp_size)
        if properties and cc in DEVICE_PROPERTIES:
            self.utils = _OfflineUtils(DEVICE_PROPERTIES[cc])

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device: int | None = None) -> int:
        return 0

    def get_current_target(self) -> Any:
        return self.target

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"offline Triton driver: {name!r} needs a real GPU")


@contextlib.contextmanager
def offline_cuda(cc: int = 90, warp_size: int = 32, *, properties: bool = False) -> Iterator[None]:
    """Within: Triton compiles for CUDA ``cc`` with no GPU present (ptxas and nvdisasm ship with
    Triton). Only compiling works; kernel launches must be turned into warm-ups by the caller.
    ``properties``: ``driver.active.utils.get_device_properties`` answers for the
    generation's SXM part (:data:`DEVICE_PROPERTIES`), for files that size things at import."""
    from triton.runtime.driver import driver  # triton: optional (the verify extra), 0.1 s to import

    previous = driver._active
    driver.set_active(_OfflineDriver(cc, warp_size, properties))
    try:
        yield
    finally:
        driver._active = previous


_PTX_DROP = re.compile(r"^\s*(\.loc|\.file|//|\$L__|\.section\s+\.debug)")
_PTX_DEBUG = re.compile(r"^\s*\.section\s+\.debug")


def normalise(asm: str, kind: str, names: list[str]) -> str:
    """Machine code with what differs between equal kernels removed: names, comments, debug.
    ``kind`` is "ptx" or "sass"; every name in ``names`` becomes ``KERNEL``."""
    lines: list[str] = []
    for line in asm.splitlines():
        if kind == "ptx":
            if _PTX_DEBUG.match(line):
                break  # the debug sections run to the end of the module
            if _PTX_DROP.match(line):
                continue
            line = line.split("//", 1)[0]
        else:
            if line.startswith(("Function:", "nvdisasm", "\t.headerflags", "\t.elftype")) or "warning" in line:
                continue
        line = line.rstrip()
        if line:
            lines.append(line)
    text = "\n".join(lines)
    for n in sorted(set(names), key=len, reverse=True):
        text = re.sub(rf"\b{re.escape(n)}(?=\b|_param)", "KERNEL", text)
    return text
