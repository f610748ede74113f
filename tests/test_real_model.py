"""End to end on the real MiniLM model: mined with sentence-transformers, queried with the
numpy implementation — the same vectors, so a kernel finds itself at distance ~0."""

from __future__ import annotations

import pytest

from conftest import ROOT, flat_fixtures


@pytest.fixture
def real_models(monkeypatch):
    monkeypatch.delenv("SKEL_EMBEDDER", raising=False)
    from skel.embed import NumpyMiniLM, SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(), NumpyMiniLM()


def test_mined_with_torch_queried_with_numpy(tmp_path, real_models):
    from skel.miner.mine import mine
    from skel.miner.sources import DirectorySource
    from skel.retriever.suggest import load_kernels
    from skel.store.knowledge import KnowledgeBase

    bulk, query = real_models
    kb = KnowledgeBase.open(str(tmp_path / "store"))
    fixtures = flat_fixtures(tmp_path / "fixtures")
    report = mine(DirectorySource(fixtures, "fixtures"), kb, embedder=bulk, jobs=1)
    assert report.kernels > 100
    for kf in load_kernels(fixtures / "online_softmax.py")[:3]:
        (nearest,) = kb.similar(query.embed([kf.text()])[0], n=1)
        assert nearest.function == kf.name and nearest.distance < 1e-5


def test_suggest_uses_the_numpy_model_without_importing_torch(tmp_path, real_models):
    import json
    import os
    import subprocess
    import sys

    from skel.miner.mine import mine
    from skel.miner.sources import DirectorySource
    from skel.store.knowledge import KnowledgeBase

    bulk, _ = real_models
    store = tmp_path / "store"
    mine(DirectorySource(flat_fixtures(tmp_path / "fixtures"), "fixtures"), KnowledgeBase.open(str(store)),
         embedder=bulk, jobs=1)
    code = (
        "import sys, json\nfrom skel.cli import cli\n"
        f"try:\n    cli(['suggest', {str(ROOT / 'examples' / 'row_softmax.py')!r}, '--store', {str(store)!r}, "
        "'--json'])\n"
        "except SystemExit as e:\n    code = e.code\n"
        "print('HEAVY', json.dumps([m for m in ('torch', 'sentence_transformers') if m in sys.modules]), code)"
    )
    env = {k: v for k, v in os.environ.items() if k != "SKEL_EMBEDDER"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    tail = out.stdout.strip().splitlines()[-1]
    assert tail == "HEAVY [] 0", out.stdout[-2000:] + out.stderr[-2000:]
    payload = json.loads(out.stdout[: out.stdout.rindex("HEAVY")])
    sugg = payload["kernels"][0]["suggestions"]
    assert any(s["evidence"] for s in sugg), "locations come from the mined fixtures"
