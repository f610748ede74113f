"""One entry point for every language: which extractor reads a file, by its name.

``.py`` files are Triton (``skel.kernels.triton``, libcst); ``.cu``, ``.cuh`` and the C++
suffixes are CUDA C++ (``skel.kernels.cuda``, tree-sitter). Both fill the same
:class:`~skel.kernels.model.KernelFacts`, so nothing downstream has a second path; each
parser (libcst, tree-sitter) is imported only when a file of its language comes along.
"""

from __future__ import annotations

import re

from skel.kernels import cuda
from skel.kernels.cuda import KERNEL_HINT as CUDA_HINT  # light: tree-sitter is imported on first parse
from skel.kernels.model import KernelFacts

CUDA_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".hpp", ".hh", ".h")
SUFFIXES = (".py", *CUDA_SUFFIXES)
#: what a file of each language must contain to hold a unit (checked before parsing)
_HINTS = {"triton": re.compile(r"\bjit\b"),
          "cuda": CUDA_HINT}
#: what `skel suggest` says a file of each language lacks when it finds nothing
WANTED = {"triton": "@triton.jit kernel",
          "cuda": "__global__ kernel or Python-bound function (pybind11/nanobind .def)"}


def language_of(path: str) -> str:
    """"triton" for ``.py`` (and names without a known suffix), "cuda" for C++/CUDA files."""
    return "cuda" if path.lower().endswith(CUDA_SUFFIXES) else "triton"


def hint(text: str, path: str) -> bool:
    """Cheap pre-check: can this file hold a unit of its language at all?"""
    lang = language_of(path)
    if lang == "triton" and "triton" not in text:
        return False
    return bool(_HINTS[lang].search(text))


def extract(text: str, path: str = "<string>", *, helpers: bool = False) -> list[KernelFacts]:
    """The units of ``text`` (kernels, and Python bindings for C++), by ``path``'s language.
    Raises :class:`~skel.kernels.model.ParseError`."""
    if language_of(path) == "cuda":
        return cuda.extract_file(text, path, helpers=helpers)
    # the Triton extractor: 130 ms to import (libcst, 117 ms); a CUDA-only run never needs it
    from skel.kernels import triton

    return triton.extract_file(text, path, helpers=helpers)
