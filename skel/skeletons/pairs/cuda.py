"""Building a CUDA C++ example pair with ``torch.utils.cpp_extension.load_inline``.

A CUDA example holds its two sides as module-level strings (``before_cuda``, ``after_cuda``):
the text the template shows, includes and all. Both sides define the same kernel and the same
host function, so they are compiled as ONE extension (one nvcc and one host-compiler run, not
two: the device machine's time is scarce), each side inside its own namespace with the
includes hoisted above both. The build happens the first time a launcher runs, once per
process; importing an example compiles nothing, so it imports on a machine without a GPU.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from typing import Any

NEEDS = "needs a CUDA GPU and nvcc"
SIDES = ("before", "after")


def _split_includes(src: str) -> tuple[list[str], str]:
    """(the ``#include`` lines, everything else): includes cannot sit inside a namespace."""
    includes: list[str] = []
    body: list[str] = []
    for line in src.splitlines():
        (includes if line.lstrip().startswith("#include") else body).append(line)
    return includes, "\n".join(body)


def combined_source(before_cuda: str, after_cuda: str) -> str:
    """Both sides in one translation unit: ``namespace before { ... }`` and ``after``."""
    includes: list[str] = []
    bodies = []
    for side, src in zip(SIDES, (before_cuda, after_cuda)):
        inc, body = _split_includes(src)
        includes += [i for i in inc if i not in includes]
        bodies.append(f"namespace {side} {{\n{body}\n}}  // namespace {side}\n")
    return "\n".join(includes) + "\n\n" + "\n".join(bodies)


def bindings(signature: str) -> str:
    """The host-side declarations and the module binding ``before``/``after`` to the two
    sides' host function of ``signature`` (e.g. ``void silu_and_mul(torch::Tensor out, ...)``)."""
    m = re.search(r"(\w+)\s*\(", signature)
    if not m:
        raise ValueError(f"not a C++ function signature: {signature!r}")
    fn = m.group(1)
    decls = "\n".join(f"namespace {side} {{ {signature}; }}" for side in SIDES)
    defs = "\n".join(f'  m.def("{side}", &{side}::{fn});' for side in SIDES)
    return f"{decls}\n\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {{\n{defs}\n}}\n"


def require_gpu(what: str) -> None:
    """A clear one-line error where the pair cannot run: no GPU, or no nvcc."""
    import torch  # torch: ~0.8 s to import, and only a pair being run needs it (importing a pair builds nothing)

    if not torch.cuda.is_available():
        raise RuntimeError(f"{what}: {NEEDS} (torch sees no GPU; the kernels are CUDA C++ built with load_inline)")
    from torch.utils.cpp_extension import CUDA_HOME  # torch's extension builder: heavy, and only for a GPU run

    if CUDA_HOME is None:
        raise RuntimeError(f"{what}: {NEEDS} (no CUDA toolkit found: set CUDA_HOME or put nvcc on PATH)")


@lru_cache(maxsize=None)
def build(name: str, before_cuda: str, after_cuda: str, signature: str) -> Any:
    """The compiled extension with ``before`` and ``after`` functions; built once per process
    (and reused across processes from torch's extension cache while the sources are unchanged)."""
    require_gpu(name)
    from torch.utils.cpp_extension import load_inline  # torch's extension builder: heavy, and only for a GPU run

    cuda = combined_source(before_cuda, after_cuda)
    digest = hashlib.sha1((cuda + signature).encode()).hexdigest()[:10]
    return load_inline(name=f"skel_{name}_{digest}", cpp_sources=[bindings(signature)], cuda_sources=[cuda],
                       extra_cuda_cflags=["-O3", "-lineinfo"], verbose=False)
