"""The README documents every command and every skeleton; the catalog docs are complete."""

from __future__ import annotations

import re

from conftest import ROOT
from skel.skeletons.registry import all_skeletons

README = (ROOT / "README.md").read_text()


def _commands():
    import click

    from skel.cli import cli

    out = []
    for name, cmd in cli.commands.items():
        if isinstance(cmd, click.Group):
            out += [f"skel {name} {sub}" for sub in cmd.commands]
        else:
            out.append(f"skel {name}")
    return out


def test_every_command_is_in_the_readme():
    missing = [c for c in _commands() if c not in README]
    assert not missing, f"README does not mention: {missing}"


def test_every_skeleton_is_in_the_readme_catalog():
    missing = [s.id for s in all_skeletons() if not re.search(rf"\b{re.escape(s.id)}\b", README)]
    assert not missing, f"README catalog lacks: {missing} (paste `skel skeletons list`)"


def test_every_command_has_help_text():
    from click.testing import CliRunner

    from skel.cli import cli

    for c in _commands():
        args = c.split()[1:] + ["--help"]
        r = CliRunner().invoke(cli, args)
        assert r.exit_code == 0 and len(r.output) > 200, c


# internal team notes a user of skel does not have: a skeleton's documentation must cite
# something the user can open (a repository path at a version, a paper, a URL, a doc here)
INTERNAL_SOURCES = re.compile(r"platform\.md|techniques\.md|\bthe brief\b", re.IGNORECASE)


def test_skeleton_docs_cite_no_internal_notes():
    bad = {}
    for s in all_skeletons():
        text = "\n".join((s.doc, s.title, s.summary))
        found = sorted({m.group(0) for m in INTERNAL_SOURCES.finditer(text)})
        if found:
            bad[s.id] = found
    assert not bad, f"skeleton docs cite internal notes (cite a path at a version, a paper or a URL): {bad}"


def _setup_lines() -> tuple[str, str]:
    """README set-up's two command lines (the bash block under 'Set-up')."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("## Set-up", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    lines = [ln for ln in block.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    assert len(lines) == 2, lines
    return lines[0], lines[1]


def test_setup_installs_torch_for_the_cpu_explicitly():
    """#37: on a stock index, Linux `torch==2.13.0` resolves to the CUDA build (several GB). The
    set-up asks PyTorch's CPU index for the `+cpu` build, and CI runs the same install line."""
    install, _ = _setup_lines()
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in install
    assert "torch==2.13.0+cpu" in install
    # torch comes first, on its own: the project's resolve then finds it installed and keeps it
    assert install.index("torch==2.13.0+cpu") < install.index("-e '.[test,dev]'")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    pip_part = install.split("&& .venv/bin/skel suggest", 1)[0].split("pip install -q --upgrade pip && ", 1)[1]
    for cmd in pip_part.split(" && "):
        assert cmd.strip() in ci, f".ci/run does not run the README's {cmd!r}"
