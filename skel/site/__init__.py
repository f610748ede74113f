"""``skel site OUT``: the catalog and a store as a static site people can browse offline.

An adapter, beside the command line and the MCP server: it reads everything through the
service API (``skel.api.catalog_snapshot``) and only renders. Pages (``pages.py``,
``templates/``), pictures (``plots.py``, matplotlib → SVG) and text helpers (``text.py``)
live here; ``report.py`` writes the page of one ``skel verify`` run.

The site is built in a new folder beside OUT and swapped in at the end, so an interrupted
build leaves the previous site whole; a folder that is not a skel site is never replaced.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import asdict, dataclass
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from skel.errors import InputError, UsageError

if TYPE_CHECKING:
    from skel.api import CatalogSnapshot

MARKER = ".skel-site"  # in every folder this module wrote; only such a folder is replaced
ASSETS = Path(__file__).parent / "assets"


@dataclass
class SiteReport:
    out: str
    pages: int
    plots: int
    skeletons: int
    sources: int
    seconds: float

    def to_dict(self) -> dict:
        return asdict(self)


def require() -> None:
    missing = []
    for module, dist in (("jinja2", "jinja2"), ("matplotlib", "matplotlib")):
        try:
            __import__(module)
        except ImportError:
            missing.append(dist)
    if missing:
        raise UsageError(f"skel site needs {' and '.join(missing)}: pip install 'skel[site]'")


def prepare(out: str | Path) -> Path:
    """Check OUT can take a site: missing, empty, or a site this module wrote."""
    if not str(out).strip():
        raise InputError("give OUT, the folder to write into")
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise InputError(f"{out}: exists and is not a folder")
    if path.is_dir() and any(path.iterdir()) and not (path / MARKER).is_file():
        raise InputError(f"{out}: a folder that is not a skel site and not empty; give a new or empty folder")
    return path


def swap_in(tmp: Path, path: Path) -> None:
    """Replace ``path`` by the finished ``tmp`` (both beside each other), old site last."""
    (tmp / MARKER).write_text("written by skel; `skel site` replaces this folder when rebuilding\n")
    old = None
    if path.exists():
        old = path.with_name(f".{path.name}.old-{int(time.time() * 1000)}")
        path.rename(old)
    tmp.rename(path)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


@contextmanager
def writing(path: Path) -> Iterator[Path]:
    """A new folder beside ``path`` to write into, swapped in for ``path`` when the block
    ends; removed, and ``path`` left as it was, when it raises. A folder that cannot be
    written is one clear error."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.new-", dir=path.parent))
        yield tmp
        swap_in(tmp, path)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from exc
    finally:
        if tmp is not None and tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def build(snap: CatalogSnapshot, out: str | Path,
          progress: Callable[[int, int, str], None] | None = None) -> SiteReport:
    """Write the whole site for ``snap`` into OUT."""
    # pages need the site extra (jinja2's markupsafe at import): imported here, so that
    # without it require() says what to install instead of an ImportError
    from skel.site.pages import catalog_markdown, render_site, site_json

    require()
    t0 = time.perf_counter()
    path = prepare(out)
    with writing(path) as tmp:
        shutil.copytree(ASSETS, tmp / "assets")
        generated = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        pages = render_site(snap, tmp, generated=generated, progress=progress)
        (tmp / "catalog.md").write_text(catalog_markdown(snap), encoding="utf-8")
        (tmp / "site.json").write_text(site_json(snap, pages), encoding="utf-8")
    return SiteReport(out=str(path), pages=len(pages.pages), plots=len(pages.plots),
                      skeletons=len(snap.skeletons), sources=len(snap.sources),
                      seconds=time.perf_counter() - t0)
