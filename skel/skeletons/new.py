"""Scaffold a new skeleton's folder: ``python -m skel.skeletons.new ID --lang triton|cuda``.

Writes ``skel/skeletons/catalog/<id_with_underscores>/`` with everything a skeleton needs:
``skeleton.py`` (its documentation under the required headings, its conditions, its
subject), ``example.py`` (the runnable before → after pair in the harness format, or a CUDA
template pair) and ``fixtures.py``/``fixtures.cu`` (a kernel that must match and one that must
not). Every place that needs a person's knowledge says ``FILL IN``: the registry refuses a
skeleton whose rule still does (``base.validate``), so the catalog and every test fail until
it is written, and ``tests/test_new_skeleton.py`` refuses a pair or fixtures that still do
(``registry.refuse_scaffold``) — a scaffold never ships as a skeleton by accident.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from skel.skeletons.base import ID_RE
from skel.skeletons.base import SCAFFOLD_MARKER as FILL

CATALOG_DIR = Path(__file__).parent / "catalog"

_INIT = '''"""The `{id}` skeleton: `skeleton.py` says what it is and when it applies, `example.py`
is its runnable before → after pair, `fixtures.*` the kernels it must and must not match."""
'''

_SKELETON = '''"""{FILL}: one line saying what the technique does (the first line is its headline).

## What it does
{FILL}: the rewrite, in the terms of the kernel's code.

## Why it is faster
{FILL}: the mechanism (bytes, instructions, occupancy, latency) and when it does not pay.

## Applies when
- {FILL}: the code shape the conditions below check, and the sizes where it pays.

## Does not apply when
- {FILL}: the near misses the fixtures' `ok` kernels show.

## References
- {FILL}: repository `path/to/file` (`kernel`: what to look at) — at `<commit>`
"""

from __future__ import annotations

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import {builder}

#: the technique is already used: {FILL}
PRESENT = {present}
#: the subject: the operation the technique rewrites ({FILL})
SUBJECT = {subject}

SKELETON = Skeleton(
    id="{id}",
    title="{FILL}: a short title",
    summary="{FILL}: one sentence of at most 120 characters.",
    category=Category.MEMORY,  # {FILL}: TUNING, MEMORY, ARITHMETIC, DECOMPOSITION, FUSION or HOST
    doc=__doc__,
    present=PRESENT,
    preconditions=[SUBJECT],
    subject=SUBJECT,
    env=Env(),
    helps=("memory",),
{languages})
'''

_TRITON_PRESENT = 'calls("tl.FILL_IN_present", name="{id}-present", describe="{FILL}")'
_TRITON_SUBJECT = 'calls("tl.FILL_IN_subject", name="{id}-subject", describe="{FILL}")'
_CUDA_PRESENT = 'custom("{id}-present", "{FILL}", lambda k: None)'
_CUDA_SUBJECT = 'custom("{id}-subject", "{FILL}", lambda k: None)'

_TRITON_EXAMPLE = '''"""{id}: {FILL} before → {FILL} after.

Harness format: docs/harness.md. The before/after launchers are the template shown.
{FILL}: what problem this is, its sizes, and what the timing should show.
"""

import torch
import triton
import triton.language as tl

SHAPES = {{
    "tiny": dict(N=1000),  # {FILL}: sizes; a CPU shape small enough for TRITON_INTERPRET=1
}}
CPU_SHAPES = ("tiny",)
DTYPES = ("float32",)
TOLERANCES = {{"float32": (1e-5, 1e-5)}}


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    return (torch.randn(shape["N"], generator=g, device=device).to(dtype),)


def make_outputs(shape, dtype, device):
    return (torch.empty(shape["N"], dtype=dtype, device=device),)


def reference(x):
    raise NotImplementedError("{FILL}: the torch reference")


def bytes_moved(shape, dtype):
    return 2 * shape["N"] * torch.tensor([], dtype=dtype).element_size()


@triton.jit
def before_kernel(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < N), mask=offs < N)  # {FILL}


def before(x, y):
    before_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)


@triton.jit
def after_kernel(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < N), mask=offs < N)  # {FILL}


def after(x, y):
    after_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
'''

_CUDA_EXAMPLE = '''"""{id}: {FILL} before → {FILL} after.

A template only: the CUDA sources below are what `skel skeletons show` / `skel suggest` print
(`before_cuda` → `after_cuda`). {FILL}: add a harness (see catalog/warp_shuffle_reduction/
example.py, built with `skel.skeletons.pairs.cuda`) so the pair runs and is timed on a GPU.
"""

before_cuda = r"""
// {FILL}: the kernel before
"""

after_cuda = r"""
// {FILL}: the kernel after
"""
'''

_TRITON_FIXTURES = '''# Fixtures for {id}: kernels that must match (`# skel: match`) and must not (`# skel: ok`).
# {FILL}: replace both kernels with real shapes of the technique (cite where each comes from).
import triton
import triton.language as tl


# skel: match {id}
@triton.jit
def fill_in_matching_kernel(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < N), mask=offs < N)


# skel: ok {id}
@triton.jit
def fill_in_near_miss_kernel(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < N), mask=offs < N)
'''

_CUDA_FIXTURES = '''// Fixtures for {id}: kernels that must match (`// skel: match`) and must not (`// skel: ok`).
// {FILL}: replace both kernels with real shapes of the technique (cite where each comes from).

// skel: match {id}
__global__ void fill_in_matching_kernel(const float* x, float* y, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i];
}}

// skel: ok {id}
__global__ void fill_in_near_miss_kernel(const float* x, float* y, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i];
}}
'''


def scaffold(skeleton_id: str, lang: str, catalog: Path = CATALOG_DIR) -> Path:
    """Write the folder for ``skeleton_id`` and return it. Raises ValueError for a bad id,
    an unknown language or a folder that exists (nothing is overwritten)."""
    if not ID_RE.match(skeleton_id):
        raise ValueError(f"id {skeleton_id!r} is not kebab-case (lowercase words joined by '-')")
    if lang not in ("triton", "cuda"):
        raise ValueError(f"--lang must be triton or cuda, not {lang!r}")
    folder = catalog / skeleton_id.replace("-", "_")
    if folder.exists():
        raise ValueError(f"{folder} exists already: nothing written")
    fmt = {"id": skeleton_id, "FILL": FILL}
    if lang == "triton":
        present, subject, builder = _TRITON_PRESENT.format(**fmt), _TRITON_SUBJECT.format(**fmt), "calls"
        languages, example, fixtures = "", _TRITON_EXAMPLE, ("fixtures.py", _TRITON_FIXTURES)
    else:
        present, subject, builder = _CUDA_PRESENT.format(**fmt), _CUDA_SUBJECT.format(**fmt), "custom"
        languages, example, fixtures = '    languages=("cuda",),\n', _CUDA_EXAMPLE, ("fixtures.cu", _CUDA_FIXTURES)
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(_INIT.format(**fmt))
    (folder / "skeleton.py").write_text(_SKELETON.format(present=present, subject=subject, builder=builder,
                                                         languages=languages, **fmt))
    (folder / "example.py").write_text(example.format(**fmt))
    (folder / fixtures[0]).write_text(fixtures[1].format(**fmt))
    return folder


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m skel.skeletons.new",
        description="Scaffold skel/skeletons/catalog/<id>/ (skeleton.py, example.py, fixtures). Every "
                    f"'{FILL}' marks what you must write; the catalog refuses the skeleton until none is left.")
    ap.add_argument("id", help="the skeleton's id, kebab-case (e.g. row-cache-in-registers)")
    ap.add_argument("--lang", choices=("triton", "cuda"), default="triton", help="the kernels it is judged on")
    args = ap.parse_args(argv)
    try:
        folder = scaffold(args.id, args.lang)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {folder}/: __init__.py, skeleton.py, example.py, "
          f"{'fixtures.py' if args.lang == 'triton' else 'fixtures.cu'}")
    print(f"next: fill in every '{FILL}', then run pytest tests/test_catalog.py tests/test_examples.py -k "
          f"{args.id}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
