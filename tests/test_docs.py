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
