"""`skel --help` must stay instant: no heavy imports on the way (style.md #8)."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("torch", "triton", "chromadb", "sentence_transformers", "libcst", "numpy", "transformers")


def _modules_after(code: str) -> set[str]:
    probe = code + "\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    import json

    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_help_imports_nothing_heavy():
    code = "import sys\nfrom skel.cli import cli\ntry:\n    cli(['--help'])\nexcept SystemExit:\n    pass"
    loaded = _modules_after(code)
    assert not [m for m in HEAVY if m in loaded]


def test_skeletons_list_needs_no_model_or_store():
    code = ("from skel.cli import cli\ntry:\n    cli(['skeletons', 'list'])\nexcept SystemExit:\n    pass")
    loaded = _modules_after(code)
    assert not [m for m in ("torch", "chromadb", "sentence_transformers", "numpy") if m in loaded]


def test_service_layer_imports_only_light_things():
    """skel.cli imports skel.api for every command, `--help` included."""
    loaded = _modules_after("import skel.api")
    assert not [m for m in HEAVY if m in loaded]
    assert not [m for m in loaded if m.startswith(("skel.store", "skel.miner", "skel.retriever", "skel.skeletons"))]
