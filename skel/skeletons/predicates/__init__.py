"""Shared predicates: the floor every skeleton stands on.

A skeleton (``skel/skeletons/catalog/<id>/skeleton.py``) describes one technique. When two
skeletons need the same recognition — "this kernel is autotuned", "this pointer comes
from that argument", "this loop strides over programs", "no ``tl.dot``" — the helper
lives here, once, instead of one skeleton importing another's internals.

What belongs here:

- a function of kernel facts (``skel.kernels.model.KernelFacts``) or a ``Condition``
  (``skel.skeletons.patterns`` / ``conditions``) that more than one skeleton uses;
- the shared constants (name patterns such as ``IDENT``, ``TILE_NAME``,
  ``VARYING_LENGTH``; the 2-D broadcast idioms).

What does not: anything one skeleton alone uses (it stays in that skeleton's ``skeleton.py``),
and the skeletons themselves. Modules are named by topic:

- ``names``: identifier and naming-convention patterns;
- ``tiles``: ``[:, None]`` / ``[None, :]`` broadcast idioms in source text;
- ``dots``: ``tl.dot`` presence and absence;
- ``autotune``: ``@triton.autotune`` configs, keys and tuned meta-parameters;
- ``programs``: program ids, grid axes and grid-stride loops;
- ``rows``: row-wise kernels (one row per program, reduced in one block);
- ``pointers``: which argument a pointer comes from; in-place updates and atomics;
- ``branches``: runtime branches on switch arguments;
- ``loops``: loop-carried state;
- ``masks``: constant triangular ones matrices built from index comparisons;
- ``host``: what the host code in the kernel's file does before and after its launches.
- ``cuda_gemm``: CUDA C++ GEMM mainloops: tensor-core MMAs (`mma.sync`, WGMMA, UMMA), their K
  loops, TMA / `cp.async` / plain tile loads into shared memory, FP8 MMAs.

Rules: predicates import only from ``skel.skeletons.conditions``,
``skel.skeletons.patterns``, ``skel.kernels`` and each other — never from ``skel.skeletons.catalog``;
skeletons import only from here, ``patterns``, ``conditions``, ``base`` and ``skel.kernels``.
"""
