"""One error family, stable exit codes, and what the command line does with a failure."""

from __future__ import annotations

import ast

import pytest
from click.testing import CliRunner

from conftest import ROOT
from skel import api, errors
from skel.cli import cli

FAMILY = [errors.UsageError, errors.InputError, errors.SuggestError, errors.StoreError,
          errors.NotFoundError, errors.SkeletonError]


def test_exit_codes_are_stable():
    assert (errors.EXIT_OK, errors.EXIT_NO_SUGGESTION, errors.EXIT_ERROR, errors.EXIT_INTERRUPTED) == (0, 1, 2, 130)


@pytest.mark.parametrize("cls", FAMILY)
def test_every_skel_error_exits_2_and_names_its_kind(cls):
    assert issubclass(cls, errors.SkelError) and cls.exit_code == errors.EXIT_ERROR
    assert cls.kind in {"usage", "input", "store", "not-found", "catalog"}


def test_old_names_are_the_family_members():
    from skel.embed import EmbeddingUnavailable
    from skel.retriever.suggest import SuggestError
    from skel.skeletons.base import SkeletonError
    from skel.store.knowledge import StoreError

    assert (SuggestError, SkeletonError, StoreError) == (errors.SuggestError, errors.SkeletonError, errors.StoreError)
    assert issubclass(EmbeddingUnavailable, errors.SkelError) and EmbeddingUnavailable.kind == "environment"


def test_unknown_skeleton_is_not_found_not_key_error():
    from skel.skeletons.registry import get

    with pytest.raises(errors.NotFoundError) as info:
        get("no-such-thing")
    assert not isinstance(info.value, KeyError) and "skeletons list" in str(info.value)


def test_errors_module_is_the_ground_layer():
    tree = ast.parse((ROOT / "skel" / "errors.py").read_text())
    imported = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in imported if m and m.split(".")[0] == "skel"]


def _boom(*args, **kwargs):
    raise RuntimeError("boom\nsecond line")


def test_unexpected_exception_is_one_line_and_exit_2(monkeypatch):
    monkeypatch.setattr(api, "list_skeletons", _boom)
    r = CliRunner().invoke(cli, ["skeletons", "list"])
    assert r.exit_code == 2
    assert r.stderr == "skel: internal error: RuntimeError: boom second line (run with --debug for the traceback)\n"
    assert r.stdout == ""


def test_debug_prints_the_traceback(monkeypatch):
    monkeypatch.setattr(api, "list_skeletons", _boom)
    r = CliRunner().invoke(cli, ["--debug", "skeletons", "list"])
    assert r.exit_code == 2
    assert r.stderr.startswith("Traceback (most recent call last):")
    assert "RuntimeError: boom" in r.stderr and "internal error" not in r.stderr


def test_skel_error_is_one_line_and_debug_adds_the_traceback(monkeypatch):
    def missing(*args, **kwargs):
        raise errors.StoreError("no knowledge base at /x")

    monkeypatch.setattr(api, "store_info", missing)
    r = CliRunner().invoke(cli, ["store", "info"])
    assert (r.exit_code, r.stderr) == (2, "skel: error: no knowledge base at /x\n")
    r = CliRunner().invoke(cli, ["--debug", "store", "info"])
    assert r.exit_code == 2 and "Traceback" in r.stderr
    assert r.stderr.endswith("skel: error: no knowledge base at /x\n")


def test_click_usage_errors_are_one_line():
    r = CliRunner().invoke(cli, ["suggest"])
    assert r.exit_code == 2 and "Missing argument" in r.stderr and "internal error" not in r.stderr
    assert r.stderr.startswith("skel: error: ") and r.stderr.count("\n") == 1


def test_exit_1_stays_reserved_for_no_suggestion(monkeypatch, tmp_path):
    from conftest import write
    from test_cli import TRIVIAL

    k = write(tmp_path / "trivial.py", TRIVIAL)
    assert CliRunner().invoke(cli, ["suggest", str(k)]).exit_code == errors.EXIT_NO_SUGGESTION
    monkeypatch.setattr(api, "suggest", _boom)
    assert CliRunner().invoke(cli, ["suggest", str(k)]).exit_code == errors.EXIT_ERROR
