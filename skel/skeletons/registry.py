"""Discovers the catalog: every module in ``skel.skeletons.catalog`` defining SKELETON.

Adding a skeleton is adding one module (and its fixtures file); nothing else lists them.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache, partial
from pathlib import Path

from skel.errors import NotFoundError, SkeletonError
from skel.skeletons.base import Skeleton, validate
from skel.skeletons.examples import example_path, template

CATALOG_PACKAGE = "skel.skeletons.catalog"
FIXTURES_DIR = Path(__file__).parent / "fixtures"


def _pair(skeleton_id: str) -> tuple[str, str]:
    shown = template(skeleton_id)
    return (shown.before, shown.after) if shown else ("", "")


@lru_cache(maxsize=1)
def all_skeletons() -> tuple[Skeleton, ...]:
    """Every registered skeleton, validated, sorted by id. Raises SkeletonError."""
    pkg = importlib.import_module(CATALOG_PACKAGE)
    found: dict[str, Skeleton] = {}
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{CATALOG_PACKAGE}.{info.name}")
        sk = getattr(mod, "SKELETON", None)
        if not isinstance(sk, Skeleton):
            raise SkeletonError(f"{mod.__name__} defines no SKELETON")
        sk.module = mod.__name__
        if not sk.doc:
            sk.doc = mod.__doc__ or ""
        if example_path(sk.id).is_file():  # the runnable pair is the template shown, read when asked
            sk.template_source = partial(_pair, sk.id)
        validate(sk)
        if info.name != sk.id.replace("-", "_"):
            raise SkeletonError(f"{mod.__name__}: module name must be the id with underscores ({sk.id})")
        if sk.id in found:
            raise SkeletonError(f"duplicate skeleton id {sk.id}")
        found[sk.id] = sk
    return tuple(found[i] for i in sorted(found))


def get(skeleton_id: str) -> Skeleton:
    for s in all_skeletons():
        if s.id == skeleton_id:
            return s
    known = ", ".join(s.id for s in all_skeletons())
    raise NotFoundError(f"no skeleton {skeleton_id!r}; known: {known}")


@lru_cache(maxsize=1)
def catalog_fingerprint() -> str:
    """A hash of every catalog module's source (and the shared condition, predicate and flow
    code): it changes whenever what a skeleton detects may have changed, so mined tags can
    be refreshed."""
    import hashlib

    from skel.kernels import extractor_version

    h = hashlib.sha1(extractor_version().encode())  # the data-flow view lives in skel.kernels
    here = Path(__file__).parent
    for p in sorted([*here.glob("catalog/*.py"), *here.glob("predicates/*.py"),
                     here / "conditions.py", here / "base.py"]):
        h.update(str(p.relative_to(here)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:16]


def fixture_path(skeleton_id: str) -> Path:
    """The skeleton's fixtures file: ``<id>.py`` for Triton, ``<id>.cu``/``.cpp`` for CUDA C++."""
    stem = skeleton_id.replace("-", "_")
    for suffix in (".py", ".cu", ".cpp", ".cuh"):
        if (FIXTURES_DIR / f"{stem}{suffix}").exists():
            return FIXTURES_DIR / f"{stem}{suffix}"
    return FIXTURES_DIR / f"{stem}.py"
