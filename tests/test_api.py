"""The service layer on its own, without the command line: typed results and SkelErrors."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

from conftest import write
from skel import api
from skel.errors import InputError, NotFoundError, StoreError, SuggestError, UsageError
from skel.skeletons.base import Target
from skel.store.evidence import Verification
from skel.store.knowledge import KnowledgeBase, default_location

from test_cli import FP32_DOT

TF32 = "dot-input-precision-tf32x3"


@pytest.fixture
def repo(tmp_path):
    repo = tmp_path / "repo"
    write(repo / "k.py", FP32_DOT.replace("tl.dot(a, b)", 'tl.dot(a, b, input_precision="tf32x3")'))
    return repo


@pytest.fixture
def mined(tmp_path, repo):
    store = str(tmp_path / "store")
    report = api.mine(str(repo), source="demo", version="1.0", jobs=1, store=store)
    assert report.kernels == 1
    return store


def test_open_store_policy(tmp_path):
    # reading never creates: no default store yet means "catalog only"
    assert api.open_store(None, create=False) is None
    assert not Path(default_location()).exists()
    # an explicit location must exist
    with pytest.raises(StoreError, match="no knowledge base"):
        api.open_store(str(tmp_path / "absent"), create=False)
    assert not (tmp_path / "absent").exists()
    # mining creates, the default location included; then reading finds it
    assert isinstance(api.open_store(None, create=True), KnowledgeBase)
    kb = api.open_store(None, create=False)
    assert isinstance(kb, KnowledgeBase) and kb.location == default_location()


@pytest.mark.parametrize("arch,cc", [("sm80", 80), ("sm_90", 90), (" SM100a ", 100), ("90", 90), (None, None)])
def test_parse_target_arch_spellings(arch, cc):
    t = api.parse_target("cuda", arch, "3.1.0")
    assert (t.backend, t.cc, t.triton) == ("cuda", cc, "3.1.0")


def test_parse_target_rejects_bad_arch_and_defaults_triton_to_installed():
    with pytest.raises(UsageError, match="expected e.g. sm80"):
        api.parse_target(None, "gfx90a", None)
    try:
        installed = importlib.metadata.version("triton")
    except importlib.metadata.PackageNotFoundError:
        installed = None
    assert api.parse_target(None, None, None).triton == installed


def test_suggest_without_and_with_a_store(tmp_path, mined):
    query = write(tmp_path / "q.py", FP32_DOT)
    (alone,) = api.suggest(query)
    assert TF32 in [s.id for s in alone.suggestions] and alone.store_kernels == 0
    (backed,) = api.suggest(query, store=mined, k=10, bound="compute", target=api.parse_target("cuda", "sm90", None))
    sug = {s.id: s for s in backed.suggestions}[TF32]
    assert sug.occurrences == 1 and sug.evidence[0].file == "k.py" and sug.evidence[0].source == "demo"


def test_suggest_errors_are_skel_errors(tmp_path):
    with pytest.raises(SuggestError, match="no such file"):
        api.suggest(tmp_path / "absent.py")
    q = write(tmp_path / "q.py", FP32_DOT)
    with pytest.raises(SuggestError, match="found: solve_kernel"):
        api.suggest(q, kernel="nope")
    with pytest.raises(StoreError):
        api.suggest(q, store=str(tmp_path / "absent"))


def test_list_skeletons_and_category_filter():
    every = api.list_skeletons()
    assert TF32 in [s.id for s in every] and [s.id for s in every] == sorted(s.id for s in every)
    memory = api.list_skeletons("MEMORY")
    assert memory and all("memory" in s.category for s in memory) and len(memory) < len(every)


def test_show_with_and_without_a_store(mined):
    s, evidence = api.show(TF32)
    assert s.id == TF32 and evidence.kernels is None  # no default store in this test's SKEL_HOME
    s, evidence = api.show(TF32, store=mined)
    assert (evidence.kernels, evidence.sources) == (1, ["demo"])
    assert evidence.examples == ["demo@1.0:k.py:5:solve_kernel"]


def test_show_computes_status_from_the_store_runs(mined):
    kb = KnowledgeBase.open(mined, create=False)
    run = dict(skeleton=TF32, subject="suite", kernel="suite/mm.py::mm", date="2026-12-01",
               device="NVIDIA H200", cc=90, backend="cuda", triton="3.6.0")
    kb.add_verification(Verification(verdict="faster", speedup=1.4, **run))
    target = Target(backend="cuda", cc=90, triton="3.6.0")
    _, evidence = api.show(TF32, store=mined, target=target)
    assert evidence.status.status.value == "validated"
    assert evidence.to_dict()["verification"]["line"].startswith("1.40x on NVIDIA H200")
    kb.add_verification(Verification(verdict="wrong", detail="NaN in out0", **(run | {"kernel": "k2"})))
    _, evidence = api.show(TF32, store=mined, target=target)
    assert evidence.status.status.value == "refuted" and "NaN in out0" in evidence.status.line


def test_show_unknown_id_is_not_found_before_any_store_is_opened(tmp_path):
    with pytest.raises(NotFoundError, match="unknown skeleton 'nope'"):
        api.show("nope", store=str(tmp_path / "absent"))


def test_store_info(mined):
    with pytest.raises(StoreError, match="no knowledge base"):
        api.store_info()  # the default store does not exist, and info needs one
    info = api.store_info(mined)
    assert (info.location, info.kernels) == (mined, 1)
    (src,) = info.sources
    assert (src.name, src.version, src.state, src.counts["kernels"]) == ("demo", "1.0", "complete", 1)
    assert list(info.to_dict()) == ["location", "schema", "kernels", "sources", "note"] and info.note is None


def test_mine_reports_and_refuses_bad_input(tmp_path, repo):
    with pytest.raises(UsageError, match="exactly one of PATH or --package"):
        api.mine()
    with pytest.raises(UsageError):
        api.mine(str(repo), package="liger_kernel")
    with pytest.raises(InputError, match="no such file or directory"):
        api.mine(str(tmp_path / "nowhere"))
    with pytest.raises(InputError, match="not installed"):
        api.mine(package="no_such_package_xyz")
    assert not Path(default_location()).exists(), "no store is created for a refused mine"
    seen = []
    report = api.mine(str(repo), jobs=1, progress=lambda done, total, label: seen.append(label))
    assert report.kernels == 1 and report.source == "repo" and "store" in seen
    assert api.store_info().kernels == 1, "mining without --store fills the default store"
