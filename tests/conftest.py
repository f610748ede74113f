"""Shared test set-up: every test gets its own SKEL_HOME and the deterministic hash
embedder, so unit tests never load a model (a few tests opt into the real one)."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Kernels run on the CPU through Triton's interpreter unless a GPU run asks otherwise
# (SKEL_TEST_DEVICE=cuda on the GPU machine). Set before anything imports triton.
if os.environ.get("SKEL_TEST_DEVICE", "cpu") == "cpu":
    os.environ.setdefault("TRITON_INTERPRET", "1")
# Every fitting technique is listed (`--threshold 0`) unless a test is marked `calibrated`
# (see `_isolated`); set here too for fixtures wider than a test, which run before it.
os.environ["SKEL_THRESHOLD"] = "0"


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path, request):
    monkeypatch.setenv("SKEL_HOME", str(tmp_path / "skel-home"))
    # Most tests exercise what a suggestion carries and how it renders (tiers, notes, the
    # prompt's budget, SARIF): they list every fitting technique, as `--threshold 0` does.
    # Tests of the shipped threshold itself (what is held back by default) are marked
    # `calibrated` and run with the model's own threshold.
    if request.node.get_closest_marker("calibrated") is not None:
        monkeypatch.delenv("SKEL_THRESHOLD", raising=False)
    monkeypatch.setenv("SKEL_EMBEDDER", "hash")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture
def kb(tmp_path):
    from skel.store.knowledge import KnowledgeBase

    return KnowledgeBase.open(str(tmp_path / "store"))


@pytest.fixture
def hash_embedder():
    from skel.embed import HashEmbedder

    return HashEmbedder()


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def flat_fixtures(dest: Path) -> Path:
    """Every fixtures file of the catalog copied side by side into ``dest`` under its
    catalog-wide name (``online_softmax.py``, ``cp_async_multistage.cu``): a tree of real
    kernels to mine, as the flat fixtures folder was."""
    import shutil

    from skel.skeletons.registry import fixture_files, fixture_name

    dest.mkdir(parents=True, exist_ok=True)
    for p in fixture_files():
        shutil.copy(p, dest / fixture_name(p))
    return dest


def run_skel(*args: str, env: dict | None = None, cwd: Path | None = None):
    """Run the CLI in a fresh process (exit codes and import behaviour are real)."""
    import subprocess

    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "skel.cli", *args], capture_output=True, text=True,
                          env=full_env, cwd=cwd or ROOT, timeout=600)


@pytest.fixture(scope="session")
def small_site(tmp_path_factory):
    """A site built once per run from a small store (tests/site_store.py): its folder, the
    store and the repository it was mined from. Skips, saying why, without the site extra."""
    pytest.importorskip("jinja2", reason="the site extra (jinja2, matplotlib) is not installed")
    pytest.importorskip("matplotlib", reason="the site extra (jinja2, matplotlib) is not installed")
    sys.path.insert(0, str(Path(__file__).parent))
    import site_store

    from skel import api
    from skel.site import build

    base = tmp_path_factory.mktemp("site")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SKEL_HOME", str(base / "home"))
        mp.setenv("SKEL_EMBEDDER", "hash")
        store, repo = site_store.build_store(base)
        report = build(api.catalog_snapshot(store=str(store)), base / "out")
    return base / "out", store, repo, report
