"""`python -m skel.skeletons.new ID` scaffolds a whole skeleton folder that fails until filled in."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from skel.errors import SkeletonError
from skel.skeletons import expectations, registry
from skel.skeletons.base import SCAFFOLD_MARKER, validate
from skel.skeletons.new import scaffold


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("lang, fixtures", [("triton", "fixtures.py"), ("cuda", "fixtures.cu")])
def test_scaffold_writes_a_complete_folder_refused_until_filled(tmp_path, lang, fixtures):
    folder = scaffold("row-cache-in-registers", lang, catalog=tmp_path)
    assert folder == tmp_path / "row_cache_in_registers"
    assert sorted(p.name for p in folder.iterdir()) == sorted(["__init__.py", "skeleton.py", "example.py", fixtures])
    for p in folder.iterdir():
        if p.name != "__init__.py":
            assert SCAFFOLD_MARKER in p.read_text(), p.name
    # the fixtures already name the skeleton both ways: one kernel must match, one must not
    kinds = {e.kind for e in expectations.read(folder / fixtures) if e.skeleton_id == "row-cache-in-registers"}
    assert kinds == {"match", "ok"}

    sk = _load(folder / "skeleton.py", f"scaffold_{lang}").SKELETON
    sk.template_source = lambda: ("before", "after")
    with pytest.raises(SkeletonError, match="still a scaffold"):
        validate(sk)

    # filled in (every marker replaced), the same file is a valid skeleton
    filled = folder / "skeleton.py"
    filled.write_text(filled.read_text().replace(SCAFFOLD_MARKER, "Written"))
    sk = _load(filled, f"filled_{lang}").SKELETON
    sk.template_source = lambda: ("before", "after")
    validate(sk)
    assert sk.subject is sk.preconditions[0] and sk.languages == ((lang,) if lang == "cuda" else ("triton",))


def test_no_catalog_folder_is_still_a_scaffold():
    for s in registry.all_skeletons():
        registry.refuse_scaffold(s.id)


def test_the_registry_refuses_a_folder_whose_pair_or_fixtures_are_still_a_scaffold(tmp_path, monkeypatch):
    real = registry.CATALOG_DIR / "online_softmax"
    copy = tmp_path / "online_softmax"
    copy.mkdir()
    for name in ("example.py", "fixtures.py"):
        (copy / name).write_text((real / name).read_text())
    monkeypatch.setattr(registry, "CATALOG_DIR", tmp_path)
    registry.refuse_scaffold("online-softmax")  # a finished folder passes
    (copy / "fixtures.py").write_text(f"# {SCAFFOLD_MARKER}: kernels\n")
    with pytest.raises(SkeletonError, match=r"still a scaffold.*fixtures\.py"):
        registry.refuse_scaffold("online-softmax")


def test_scaffold_refuses_bad_ids_and_never_overwrites(tmp_path):
    with pytest.raises(ValueError, match="kebab-case"):
        scaffold("Row_Cache", "triton", catalog=tmp_path)
    with pytest.raises(ValueError, match="--lang"):
        scaffold("row-cache", "rust", catalog=tmp_path)
    scaffold("row-cache", "triton", catalog=tmp_path)
    with pytest.raises(ValueError, match="exists already"):
        scaffold("row-cache", "triton", catalog=tmp_path)


def test_the_command_line_says_what_to_do_next_and_exits_2_on_a_clash():
    done = subprocess.run([sys.executable, "-m", "skel.skeletons.new", "online-softmax"], capture_output=True,
                          text=True)
    assert done.returncode == 2 and "exists already" in done.stderr
    assert sorted(p.name for p in (registry.CATALOG_DIR / "online_softmax").glob("*.py")) == [
        "__init__.py", "example.py", "fixtures.py", "skeleton.py"]  # nothing written over
