"""`skel site` and `skel verify --report`, read as files: every page and plot written,
every link inside the site resolving, evidence linked to the mined commit, the README's
table generated, a foreign folder never replaced, an interrupted build leaving the old
site whole. The browser half is tests/test_site_browser.py."""

from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from conftest import ROOT, run_skel
from skel.store.evidence import track_records

pytest.importorskip("jinja2", reason="the site extra (jinja2, matplotlib) is not installed")


class _Refs(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.refs: list[str] = []
        self.h1 = 0
        self.imgs: list[dict] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "h1":
            self.h1 += 1
        if tag == "img":
            self.imgs.append(a)
        for key in ("href", "src"):
            if a.get(key):
                self.refs.append(a[key])


def _parse(page: Path) -> _Refs:
    p = _Refs()
    p.feed(page.read_text(encoding="utf-8"))
    return p


def test_every_page_and_plot_is_written(small_site):
    out, _, _, report = small_site
    from skel.skeletons.registry import all_skeletons

    ids = [s.id for s in all_skeletons()]
    data = json.loads((out / "site.json").read_text())
    assert [s["id"] for s in data["skeletons"]] == ids
    for i in ids:
        assert (out / "skeletons" / f"{i}.html").is_file(), i
    assert (out / "sources" / "kernels.html").is_file()
    assert report.pages == len(data["pages"]) == len(ids) + 3  # + index, history, one source
    index = (out / "index.html").read_text()
    assert index.count("<tr data-search=") == len(ids)
    # every plot is an SVG document that says what it shows
    assert report.plots == len(data["plots"]) > 50
    for rel in data["plots"]:
        root = ET.parse(out / rel).getroot()
        title = root.find("{http://www.w3.org/2000/svg}title")
        assert title is not None and title.text and len(title.text) > 20, rel


def test_links_inside_the_site_resolve_and_pages_are_accessible(small_site):
    out = small_site[0]
    external = set()
    for page in sorted(out.rglob("*.html")):
        p = _parse(page)
        assert p.h1 == 1, page  # one heading names the page
        for img in p.imgs:
            assert img.get("alt", "").strip(), f"{page}: an image without alt text"
        for ref in p.refs:
            u = urlparse(ref)
            if u.scheme in ("http", "https", "file"):
                external.add(ref)
                continue
            if not u.path:  # "#main"
                continue
            target = (page.parent / unquote(u.path)).resolve()
            assert target.is_file(), f"{page.relative_to(out)} links to {ref}, which is not there"
    assert any(e.startswith("https://github.com/example-org/kernels/") for e in external)


def test_evidence_links_to_the_file_at_the_mined_commit(small_site):
    out, _, repo, _ = small_site
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    page = (out / "skeletons" / "online-softmax.html").read_text()
    url = f"https://github.com/example-org/kernels/blob/{head}/ops/online_softmax.py#L"
    assert url in page
    line = int(page.split(url, 1)[1].split('"', 1)[0])
    text = (repo / "ops" / "online_softmax.py").read_text().splitlines()
    assert "def " in text[line - 1] or text[line - 1].startswith("@")  # the kernel starts there


def test_history_and_drafts_are_shown_with_commit_links(small_site):
    out, _, repo, _ = small_site
    commits = subprocess.run(["git", "-C", str(repo), "log", "--format=%H %s"], capture_output=True, text=True,
                             check=True).stdout.splitlines()
    exp2 = next(c.split()[0] for c in commits if "exp2" in c)
    warps = next(c.split()[0] for c in commits if "8 warps" in c)
    page = (out / "skeletons" / "exp2-log2e-folding.html").read_text()
    assert f"https://github.com/example-org/kernels/commit/{exp2}" in page
    assert "introduced" in page and "1.4x" in page
    hist = (out / "history.html").read_text()
    assert f"https://github.com/example-org/kernels/commit/{warps}" in hist  # the draft
    assert "Draft candidates (1)" in hist


def test_verification_runs_and_plots_on_a_skeleton_page(small_site):
    out = small_site[0]
    page = (out / "skeletons" / "online-softmax.html").read_text()
    # the shipped H200 runs and our CPU run, each in the table; speedup, error and Triton plots
    assert "NVIDIA H200" in page and "cpu (TRITON_INTERPRET=1)" in page
    for kind in ("speedup", "error", "triton"):
        assert f"plots/online-softmax-{kind}.svg" in page
    triton_plot = (out / "plots" / "online-softmax-triton.svg").read_text()
    assert "Triton 3.6.0" in triton_plot and "Triton 3.7.1" in triton_plot
    never = (out / "skeletons" / "tma-multicast-cluster.html").read_text()  # template-only: no pair to run
    assert "Never run." in never and "plots/tma-multicast-cluster" not in never
    # how often people judged its suggestions right on real kernels, or that they never saw it
    assert track_records()["online-softmax"].line() in page
    assert "never suggested on the hand-checked" in never


def test_status_per_gpu_and_triton_on_the_index_and_the_skeleton_pages(small_site):
    """#36: the status on each (GPU, Triton) the evidence was measured on, from its runs alone."""
    out = small_site[0]
    data = json.loads((out / "site.json").read_text())
    envs = [(e["gpu"], e["triton"]) for e in data["environments"]]
    assert ("NVIDIA H200", "3.6") in envs and ("NVIDIA H100 80GB HBM3", "3.7") in envs
    assert all(not g.startswith("cpu") for g, _ in envs)  # the interpreter's runs speak for no GPU
    for e in data["environments"]:
        assert sum(e["counts"].values()) == e["total"] == len(data["skeletons"])
    softmax = next(s for s in data["skeletons"] if s["id"] == "online-softmax")
    assert [(c["gpu"], c["triton"]) for c in softmax["by_environment"]] == envs
    assert {c["status"] for c in softmax["by_environment"]} <= {"validated", "demonstrated"}
    page = (out / "skeletons" / "online-softmax.html").read_text()
    assert 'class="by-env"' in page and "Status on each GPU and Triton" in page
    index = (out / "index.html").read_text()
    assert "Status by GPU and Triton" in index and "NVIDIA H200, Triton 3.6</th>" in index


def test_source_page_counts_its_techniques(small_site):
    out, store, _, _ = small_site
    from skel.store.knowledge import KnowledgeBase

    kb = KnowledgeBase.open(str(store), create=False)
    records = kb.kernels(where={"source": "kernels"})
    n = sum("online-softmax" in r.techniques for r in records)
    page = (out / "sources" / "kernels.html").read_text()
    assert f"{len(records)} in " in page
    row = page.split('href="../skeletons/online-softmax.html"', 1)[1].split("</tr>", 1)[0]
    assert f'<td class="num">{n}</td>' in row


def test_doc_text_is_escaped(tmp_path):
    from skel.site.text import blocks, diff, inline

    assert "<script>" not in inline("<script>alert(1)</script> `x<y`")
    assert "&lt;script&gt;" in blocks("- <script>\n\n    <b>code</b>")
    assert "&lt;b&gt;" in diff("a = 1\n", "a = '<b>'\n")


def test_readme_catalog_table_is_the_generated_one():
    from skel.site.readme import current_table, generated_table

    assert current_table((ROOT / "README.md").read_text()) == generated_table(), \
        "README's catalog table drifted: python -m skel.site.readme README.md"


def test_cli_refuses_a_folder_that_is_not_a_site_and_rebuilds_its_own(tmp_path):
    foreign = tmp_path / "notes"
    foreign.mkdir()
    (foreign / "mine.txt").write_text("keep me")
    r = run_skel("site", str(foreign), "--catalog-only")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "not a skel site" in r.stderr
    assert (foreign / "mine.txt").read_text() == "keep me"
    a_file = tmp_path / "f"
    a_file.write_text("x")
    r = run_skel("site", str(a_file), "--catalog-only")
    assert r.returncode == 2 and "not a folder" in r.stderr
    r = run_skel("site", str(a_file / "site"), "--catalog-only")  # under a file: nothing can be written
    assert r.returncode == 2 and r.stderr.startswith("skel: error: cannot write") and "Traceback" not in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f", "notes"]  # no half-built folder left


def test_interrupted_build_leaves_the_old_site_whole(small_site, tmp_path, monkeypatch):
    import shutil

    from skel.api import catalog_snapshot
    from skel.site import build, pages

    site = tmp_path / "site"
    shutil.copytree(small_site[0], site)
    before = sorted(p.relative_to(site) for p in site.rglob("*"))

    def boom(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(pages, "render_site", boom)
    with pytest.raises(KeyboardInterrupt):
        build(catalog_snapshot(use_store=False), site)
    assert sorted(p.relative_to(site) for p in site.rglob("*")) == before
    assert [p.name for p in tmp_path.iterdir()] == ["site"]  # no half-built folder left beside it


def test_links_for_forges_and_not_for_packages(tmp_path):
    from skel.miner.sources import commit_url, file_url

    sha = "a" * 40
    assert file_url("github.com/o/r/sub", sha, "k.py", 7) == f"https://github.com/o/r/blob/{sha}/sub/k.py#L7"
    assert file_url("gitlab.com/o/r", sha, "k.py", 7) == f"https://gitlab.com/o/r/-/blob/{sha}/k.py#L7"
    assert file_url("package:fla", "0.6.0", "fla/k.py", 7) is None  # a wheel has no page at a commit
    assert file_url("github.com/o/r", "unversioned", "k.py", 7) is None
    assert file_url("/home/me/kernels", sha, "k.py", 7) is None
    assert commit_url(str(tmp_path), "abc") is None  # not a repository


def test_verify_report_page(tmp_path):
    """A report page from a real run of an example pair on the CPU."""
    out = tmp_path / "report"
    r = run_skel("verify", "--example", "online-softmax", "--device", "cpu", "--report", str(out))
    assert r.returncode == 0, r.stderr
    page = (out / "index.html").read_text()
    assert "correct" in page and "Not checked by this run" in page
    result = json.loads((out / "result.json").read_text())
    assert result["record"]["verdict"] == "correct"
    for shape in result["record"]["shapes"]:
        assert shape.split("(")[0] in page
    assert f"report: {out / 'index.html'}" in r.stderr
    p = _parse(out / "index.html")
    for ref in p.refs:
        if not urlparse(ref).scheme and urlparse(ref).path:
            assert (out / ref).is_file(), ref
