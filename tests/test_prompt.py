"""`skel suggest --format prompt`: one markdown block that holds its token budget on the
largest answers (a whole real file with many kernels, Triton and CUDA), shows a template
shared by several kernels once, and keeps the most useful pieces when it cuts."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
from pathlib import Path

import pytest

from conftest import run_skel, write
from skel.skeletons.registry import fixture_file

BUDGETS = (300, 1500, 4000)
CUDA_FILE = fixture_file("cuda_programmatic_dependent_launch.cu")  # 11 kernels


def _fla_file() -> Path:
    """fla-core's abc/chunk.py: 13 Triton kernels, one of the largest answers in the package."""
    spec = importlib.util.find_spec("fla")
    if spec is None or not spec.submodule_search_locations:
        msg = "pip install --no-deps fla-core==0.6.0 to run the real-file prompt tests"
        if os.environ.get("SKEL_REQUIRE_REAL_PACKAGES"):
            pytest.fail(f"fla is not installed: {msg}")
        pytest.skip(f"fla is not installed: {msg}")
    return Path(next(iter(spec.submodule_search_locations))) / "ops" / "abc" / "chunk.py"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A small mined store (catalog fixtures that use the techniques), so suggestions carry
    real locations and the block has a location piece to keep or cut."""
    from skel import api

    src = tmp_path_factory.mktemp("src")
    for name in ("autotune_configs.py", "block_pointers.py", "exp2_log2e_folding.py",
                 "vectorized_128bit_access.cu", "persistent_tile_scheduler.cu"):
        shutil.copy(fixture_file(name), src / name)
    where = str(tmp_path_factory.mktemp("kb") / "store")
    os.environ["SKEL_EMBEDDER"] = "hash"  # the module fixture runs outside the per-test monkeypatch
    api.mine(str(src), store=where, source="fixtures", version="1")
    return where


def _results(path: Path, store: str):
    """Suggestions for ``path`` asked as one usually asks, from its folder by its bare name: the
    path appears up to four times in a prompt, so where the clone lives must not decide what a
    300-token budget holds (a 105-character absolute path pushed the top reason out)."""
    from skel import api

    here = os.getcwd()
    os.chdir(path.parent)
    try:
        return api.suggest(path.name, store=store)
    finally:
        os.chdir(here)


@pytest.fixture(scope="module", params=["fla", "cuda"])
def big(request, store):
    path = _fla_file() if request.param == "fla" else CUDA_FILE
    results = _results(path, store)
    assert len(results) >= 5, f"{path} should hold many kernels"
    return results


def test_estimate_is_characters_over_three():
    from skel.retriever.prompt import estimate_tokens

    assert [estimate_tokens("x" * n) for n in (0, 1, 3, 4, 3000)] == [0, 1, 1, 2, 1000]


@pytest.mark.parametrize("budget", BUDGETS)
def test_budget_holds_and_the_top_suggestion_survives(big, budget):
    from skel.retriever.prompt import estimate_tokens, prompt, top_suggestion, verify_command
    from skel.retriever.render import markdown

    out = prompt(big, budget)
    assert estimate_tokens(out) <= budget, f"{estimate_tokens(out)} estimated tokens > {budget}"
    assert len(markdown(big)) > len(out) * 3, "the full answer is far bigger: the budget did the cutting"
    r, s = top_suggestion(big)
    assert f"`{s.id}`" in out
    assert verify_command(r.path, s.id) in out
    assert out.index(f"`{s.id}`") < out.index("Check:"), "the top suggestion comes first"
    # its reason, with the kernel's line numbers, fits every budget tested
    assert f"Fits `{r.kernel}`" in out and re.search(r"\(line \d+", out)
    if budget >= 1500:  # its change comes before any other skeleton's headline
        first = out[: out.index("\n## 2.")] if "\n## 2." in out else out
        assert "```diff" in first


def test_top_suggestion_is_a_best_tier_first_choice(big):
    """The block leads with a full match when there is one, and with some kernel's own
    first choice, not a suggestion skel ranked below others for that kernel."""
    from skel.retriever.prompt import top_suggestion

    r, s = top_suggestion(big)
    kinds = {x.kind for k in big for x in k.suggestions}
    assert s.kind == ("match" if "match" in kinds else "refine")
    assert r.suggestions[0] is s


def test_a_shared_template_appears_once_and_the_kernels_refer_to_it(big):
    from skel.retriever.prompt import groups, prompt
    from skel.retriever.render import template_diff

    out = prompt(big, 4000)
    shared = [es for es in groups(big) if len(es) >= 2 and es[0].s.kind == "match"]
    assert shared, "a many-kernel file has a skeleton several kernels share"
    es = shared[0]
    diff = template_diff(es[0].s)
    assert out.count(diff) == 1, "the shared template is shown once"
    assert f"one template for {len(es)} kernels here" in out
    # the other kernels it fits are named under it, by their lines
    block = out[out.index(f"`{es[0].s.id}` — "):]
    block = block[: block.find("\n## ") if "\n## " in block else None]
    listed = [e.r.kernel for e in es[1:] if f"`{e.r.kernel}`" in block]
    assert listed, "the other kernels refer to the one template, in its block"
    # and no diff is repeated anywhere in the block
    diffs = re.findall(r"```diff\n(.*?)```", out, re.S)
    assert len(diffs) == len(set(diffs))


def test_more_budget_shows_more_and_says_what_is_left_out(big):
    from skel.retriever.prompt import prompt

    small, large = prompt(big, 300), prompt(big, 4000)
    assert len(large) > 2 * len(small)
    assert "Left out for the 300-token budget" in small and "--format markdown" in small
    assert "```diff" not in small and "```diff" in large
    assert "Seen in: fixtures " in large, "one real mined location for the top suggestion"
    assert "Evidence: " in large


def test_cli_prompt_format_and_exit_codes(tmp_path, store):
    from skel.retriever.prompt import estimate_tokens

    r = run_skel("suggest", str(CUDA_FILE), "--format", "prompt", "--max-tokens", "600", "--store", store)
    assert r.returncode == 0, r.stderr
    assert estimate_tokens(r.stdout) <= 600 and "skel verify " in r.stdout
    trivial = write(tmp_path / "trivial.py", """
        import triton
        import triton.language as tl


        @triton.jit
        def copy_kernel(x_ptr, y_ptr):
            tl.store(y_ptr, tl.load(x_ptr))
        """)
    r = run_skel("suggest", str(trivial), "--format", "prompt")
    assert r.returncode == 1, r.stderr
    assert "0 with a fitting skeleton" in r.stdout
    r = run_skel("suggest", str(tmp_path / "absent.py"), "--format", "prompt")
    assert r.returncode == 2 and "no such file" in r.stderr
    r = run_skel("suggest", str(trivial), "--format", "prompt", "--max-tokens", "50")
    assert r.returncode == 2 and "--max-tokens" in r.stderr
