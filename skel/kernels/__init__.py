"""The analysis layer: one model of a kernel, filled by one parse per language.

- ``model``: :class:`~skel.kernels.model.KernelFacts`, the language-neutral kernel record
  every other layer reads (conditions, the store, the retriever);
- ``triton``: the Triton extractor (libcst) that fills it, positions included;
- ``flow``: the data-flow view (how names chain into a load's address, a mask or a
  ``tl.dot`` operand), built from the extractor's own tree;
- ``dtypes``: the one place dtypes are inferred from code;
- ``positions`` and ``tree``: lines and text from one code-generation pass, and cheap walks.

Nothing here imports the skeletons, the store or any stage above it.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=1)
def extractor_version() -> str:
    """A hash of this package's sources: whatever changes how facts are extracted changes
    it, so cached facts and file stamps are recomputed without anyone remembering to bump a
    number."""
    h = hashlib.sha1()
    for p in sorted(Path(__file__).parent.glob("*.py")):
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:12]
