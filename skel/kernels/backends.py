"""Which backend a Python kernel file is written for, read from its path, its imports and
its docstring (regular expressions only, no parse): the Triton extractor
(skel/kernels/triton.py) stamps it on every kernel of the file, and the importers' pass
(skel/kernels/importers.py) asks it of files it does not parse."""

from __future__ import annotations

import re

#: vendor backends other than CUDA/ROCm, recognised from a path segment or an import
_VENDOR_DIR = re.compile(r"(?:^|/)(?:backends?|_backends?|vendors?)/_?([a-z0-9_]+)(?:/|$)")
#: (at module level, or first in a `try:`: one inside `if _is_npu:` is a vendor branch of
#: CUDA code, as in sglang's layernorm.py)
_VENDOR_IMPORT = re.compile(
    r"^(?:try:[ \t]*\n[ \t]+)?(?:import|from)[ \t]+(torch_npu|torch_mlu|torch_musa|intel_extension_for_pytorch)\b",
    re.M)
_VENDORS = (("ascend", "npu"), ("npu", "npu"), ("cambricon", "mlu"), ("mlu", "mlu"), ("musa", "musa"),
            ("mthreads", "musa"), ("xpu", "xpu"), ("intel", "xpu"))
_CUDA_LIKE = ("nvidia", "cuda", "amd", "rocm", "hip")
_IMPORT_BACKEND = {"torch_npu": "npu", "torch_mlu": "mlu", "torch_musa": "musa", "intel_extension_for_pytorch": "xpu"}


#: a module-level import of AMD's kernel library (aiter runs only on ROCm). Only an
#: unindented one: CUDA-and-ROCm code imports it inside `if _is_hip:` / `if _use_aiter:`.
_AMD_IMPORT = re.compile(r"^(?:import|from)\s+aiter\b", re.M)


#: a folder or file-name part that marks AMD-only code (`models/x/amd/ops.py`,
#: `mxfp8_amd_gfx95.py`, `rocm_mla.py`, `backend/_amd/`, AMD's `aiter` package or an
#: `aiter` backend file): whole words between separators.
#: Only the file name and the four folders above it are read: a checkout's own location
#: (`~/src/rocm-work/...`) says nothing about the code in it.
_AMD_ONLY = re.compile(r"(?:^|[/_.-])(?:amd|rocm|hip|aiter|gfx\d+[a-z]?)(?=[/_.-]|$)")


#: a folder or file-name part that names a vendor backend outright
#: (`deepseek_v4/xpu/xpu_qnorm_rope.py`, `chunk_npu.py`): whole words between separators,
#: read like `_AMD_ONLY` from the file name and the four folders above it
_VENDOR_PART = re.compile(r"(?:^|[/_.-])(xpu|npu|ascend|mlu|musa)(?=[/_.-]|$)")
_PART_BACKEND = {"xpu": "xpu", "npu": "npu", "ascend": "npu", "mlu": "mlu", "musa": "musa"}


#: the module docstring's first paragraph (a comment or two and a shebang may precede it)
_MODULE_DOC = re.compile(r'\A(?:\s*#[^\n]*\n)*\s*[rRuU]?("""|\'\'\')(.*?)(?:\n\s*\n|\1)', re.S)
#: a docstring that says which vendor the module is for (`"""HIP fused compressor kernels."""`,
#: `"""Native MXFP8 ops for AMD CDNA4 (gfx950)."""`, `"""... on ROCm."""`), unless it names both
#: vendors' code paths (`CUDA and ROCm`, `NVIDIA`)
_DOC_VENDOR = (("rocm", re.compile(r"\b(HIP|ROCm|AMD|CDNA\d?|RDNA\d?|gfx\d+\w*|MI[23]\d\dX?)\b")),
               ("xpu", re.compile(r"\b(XPU|Intel GPUs?)\b")), ("npu", re.compile(r"\b(Ascend|NPU)\b")))
_DOC_BOTH = re.compile(r"(?i)\b(nvidia|hopper|blackwell|ampere|sm_?\d{2,3}a?|"
                       r"cuda\s*(and|/|or|,)\s*(rocm|hip|amd)|(rocm|hip|amd)\s*(and|/|or|,)\s*cuda)\b")


def _docstring_backend(source: str) -> str:
    """The backend a module's docstring says it is written for ("" when it names none, or both)."""
    m = _MODULE_DOC.match(source)
    if not m:
        return ""
    first = m.group(2)
    if _DOC_BOTH.search(first):
        return ""
    return next((backend for backend, rx in _DOC_VENDOR if rx.search(first)), "")


def backend_hint(path: str, source: str) -> str:
    """"npu", "mlu", ... when a file sits in a vendor backend folder or imports a vendor
    torch extension, or when its file name or a folder near it names the vendor (`xpu`,
    `npu`, `ascend`, `mlu`, `musa` as a whole word), or the first paragraph of its
    docstring does ("Fused RMSNorm for AMD ROCm.", not "... on CUDA and ROCm.");
    "rocm" when it imports aiter at module level or its path says it is
    AMD-only (an `amd`/`rocm`/`hip`/`aiter`/`gfx9xx` folder or file-name part: CUDA-only
    techniques such as PDL do not run there); "" for
    ordinary (CUDA/ROCm) Triton — and for vendor folders we do not know by name (a known
    limit: such kernels are assessed as CUDA/ROCm ones)."""
    where = path.replace("\\", "/").lower()
    for m in _VENDOR_DIR.finditer(where):
        name = m.group(1)
        if any(c in name for c in _CUDA_LIKE):
            return "rocm" if _AMD_ONLY.search("/" + name + "/") else ""
        for needle, backend in _VENDORS:
            if needle in name:
                return backend
    imported = _VENDOR_IMPORT.search(source)
    if imported:
        return _IMPORT_BACKEND[imported.group(1)]
    if _AMD_IMPORT.search(source):
        return "rocm"
    near = "/".join(where.split("/")[-5:])
    part = _VENDOR_PART.search(near)
    if part:
        return _PART_BACKEND[part.group(1)]
    if _AMD_ONLY.search(near):
        return "rocm"
    return _docstring_backend(source)
