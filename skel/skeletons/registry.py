"""Discovers the catalog: one folder per skeleton under ``skel/skeletons/catalog/``.

A skeleton is a folder ``catalog/<id_with_underscores>/`` holding everything about it:

- ``skeleton.py`` defines ``SKELETON`` (its conditions, subject and environment) and is its
  documentation (the module docstring, under ``base.DOC_HEADINGS``);
- ``example.py`` is its runnable before → after pair, the template shown (``pairs``);
- ``fixtures.py`` (``.cu``/``.cpp``/``.cuh`` for CUDA C++), and any ``fixtures_*`` beside it,
  hold kernels that must and must not match (``expectations``), read by the one table-driven
  test over all skeletons (``tests/test_catalog.py``).

Adding a skeleton is adding that folder (``python -m skel.skeletons.new ID`` scaffolds it);
nothing else lists skeletons: tests, docs, the README's table and the site read them from here.
"""

from __future__ import annotations

import hashlib
import importlib
import pkgutil
from functools import lru_cache, partial
from pathlib import Path
from types import ModuleType

from skel.errors import NotFoundError, SkeletonError
from skel.kernels import extractor_version
from skel.skeletons.base import SCAFFOLD_MARKER, Skeleton, validate
from skel.skeletons.pairs import example_path, template

CATALOG_PACKAGE = "skel.skeletons.catalog"
CATALOG_DIR = Path(__file__).parent / "catalog"
FIXTURE_SUFFIXES = (".py", ".cu", ".cpp", ".cuh")


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
        if not info.ispkg:
            raise SkeletonError(f"{CATALOG_PACKAGE}.{info.name}: a skeleton is a folder "
                                f"(catalog/{info.name}/skeleton.py)")
        mod = importlib.import_module(f"{CATALOG_PACKAGE}.{info.name}.skeleton")
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
            raise SkeletonError(f"{mod.__name__}: folder name must be the id with underscores ({sk.id})")
        if sk.id in found:
            raise SkeletonError(f"duplicate skeleton id {sk.id}")
        found[sk.id] = sk
    return tuple(found[i] for i in sorted(found))


def refuse_scaffold(skeleton_id: str) -> None:
    """Raise SkeletonError when the skeleton's pair or fixtures still hold the scaffold's
    marker (``validate`` checks the rule's own texts at every load; these files are checked
    by the catalog's test, off the suggest path)."""
    folder = CATALOG_DIR / skeleton_id.replace("-", "_")
    left = [p.name for p in sorted(folder.iterdir()) if p.name.startswith(("example", "fixtures"))
            and p.is_file() and SCAFFOLD_MARKER in p.read_text(encoding="utf-8", errors="replace")]
    if left:
        raise SkeletonError(f"skeleton {skeleton_id}: still a scaffold: fill in every '{SCAFFOLD_MARKER}' in "
                            f"{', '.join(left)} (catalog/{folder.name}/)")


def get(skeleton_id: str) -> Skeleton:
    """The skeleton ``skeleton_id``. Raises NotFoundError, in one line naming the closest
    ids (``unknown_id``): every way a person names a skeleton ends here (`skel skeletons
    show`, `--why-not`, `skel verify --example`, `skel apply`, the MCP tools)."""
    for s in all_skeletons():
        if s.id == skeleton_id:
            return s
    raise NotFoundError(unknown_id(skeleton_id, [s.id for s in all_skeletons()]))


def unknown_id(skeleton_id: str, known: list[str]) -> str:
    """The message for an id not in ``known``: the close ones by spelling (case aside), not
    the whole catalog ("unknown skeleton 'onlne-softmax'; did you mean online-softmax?")."""
    import difflib  # 3 ms to import: only a mistyped id pays it

    wanted = skeleton_id.strip().lower().replace("_", "-")
    close = [wanted] if wanted in known else difflib.get_close_matches(wanted, known, n=3, cutoff=0.6)
    if not close and len(wanted) >= 3:  # a part of the id: "int64" for int64-offsets
        close = [k for k in known if wanted in k][:3]
    if close:
        return f"unknown skeleton {skeleton_id!r}; did you mean {' or '.join(close)}?"
    return (f"unknown skeleton {skeleton_id!r}; none is close (`skel skeletons list`, or the MCP tool `list`, "
            f"has the {len(known)} ids)")


@lru_cache(maxsize=1)
def catalog_fingerprint() -> str:
    """A hash of every skeleton's rule (and the shared condition, pattern, predicate and flow
    code): it changes whenever what a skeleton detects may have changed, so mined tags can
    be refreshed."""
    h = hashlib.sha1(extractor_version().encode())  # the data-flow view lives in skel.kernels
    here = Path(__file__).parent
    for p in sorted([*here.glob("catalog/*/skeleton.py"), *here.glob("predicates/*.py"),
                     here / "conditions.py", here / "patterns.py", here / "base.py"]):
        h.update(str(p.relative_to(here)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:16]


def fixture_path(skeleton_id: str) -> Path:
    """The skeleton's fixtures file: ``catalog/<id>/fixtures.py`` for Triton, ``fixtures.cu``
    (or ``.cpp``/``.cuh``) for CUDA C++."""
    folder = CATALOG_DIR / skeleton_id.replace("-", "_")
    for suffix in FIXTURE_SUFFIXES:
        if (folder / f"fixtures{suffix}").exists():
            return folder / f"fixtures{suffix}"
    return folder / "fixtures.py"


def fixture_name(path: Path) -> str:
    """A fixtures file's name unique across the catalog, for copying fixtures side by side:
    its skeleton's folder plus what follows ``fixtures`` (``online_softmax.py``,
    ``launch_pdl_training_ops.py``, ``cp_async_multistage.cu``)."""
    return path.parent.name + path.name[len("fixtures"):]


def fixture_file(name: str) -> Path:
    """The fixtures file called ``name`` by ``fixture_name``. Raises NotFoundError."""
    for p in fixture_files():
        if fixture_name(p) == name:
            return p
    raise NotFoundError(f"no fixtures file {name!r} in the catalog")


def fixture_files(*suffixes: str) -> list[Path]:
    """Every fixtures file of the catalog (``fixtures.*`` and ``fixtures_*.*`` in each
    skeleton's folder), sorted; only those ending in ``suffixes`` when given."""
    wanted = suffixes or FIXTURE_SUFFIXES
    return sorted(p for p in CATALOG_DIR.glob("*/fixtures*") if p.suffix in wanted)


def codemod_path(skeleton_id: str) -> Path:
    """``catalog/<id_with_underscores>/codemod.py``: the skeleton's mechanical rewrite, when it has one."""
    return CATALOG_DIR / skeleton_id.replace("-", "_") / "codemod.py"


def codemod_of(skeleton_id: str) -> ModuleType | None:
    """The skeleton's codemod module (its ``apply(module, kernel, facts)``, see
    ``skel.skeletons.codemods``), or None when its folder has no ``codemod.py``. Raises
    NotFoundError for an unknown id, SkeletonError for a codemod without ``apply``."""
    get(skeleton_id)
    if not codemod_path(skeleton_id).is_file():
        return None
    mod = importlib.import_module(f"{CATALOG_PACKAGE}.{skeleton_id.replace('-', '_')}.codemod")
    if not callable(getattr(mod, "apply", None)):
        raise SkeletonError(f"{mod.__name__} defines no apply(module, kernel, facts)")
    return mod


def with_codemod() -> list[str]:
    """The ids of the skeletons whose folder holds a ``codemod.py``, sorted."""
    return [s.id for s in all_skeletons() if codemod_path(s.id).is_file()]
