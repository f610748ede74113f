"""The loop skel exists for, played by a script instead of a model: start `skel serve`,
ask for suggestions on a naive kernel, take the structural one among the top two (the other is
autotune-configs, validated by the suite's GPU runs), write the candidate it leads to
(kept as a fixture: tests/data/naive_softmax_online.py, the online-softmax template applied
by hand), verify it on the CPU interpreter, read the verdict, and find it in `show`."""

from __future__ import annotations

import shutil

import anyio
import pytest

from conftest import ROOT
from mcp_client import stdio_session

pytest.importorskip("mcp", reason="the MCP SDK is not installed")
pytest.importorskip("triton", reason="verify needs triton (the CPU interpreter)")

DATA = ROOT / "tests" / "data"


def test_suggest_apply_verify_show(tmp_path):
    work = tmp_path / "project"
    work.mkdir()
    shutil.copy(DATA / "naive_softmax.py", work / "softmax.py")
    progress: list[float] = []

    async def on_progress(done, total, message):
        progress.append(done)

    async def agent():
        async with stdio_session("--root", str(work), cwd=work) as s:
            # 1. what fits this kernel?
            r = await s.call_tool("suggest", {"path": "softmax.py", "k": 3, "max_tokens": 800})
            assert not r.is_error and r.structured_content["applies"]
            (kernel,) = r.structured_content["kernels"]
            top2 = {x["id"]: x for x in kernel["suggestions"][:2]}
            assert set(top2) == {"online-softmax", "autotune-configs"}, list(top2)
            top = top2["online-softmax"]
            assert top["kind"] == "match"
            assert any("max pass, then an exp pass" in w for w in top["why"])
            assert "m_new" in top["after"]  # the template the candidate follows
            assert "online-softmax" in r.structured_content["prompt"]

            # before: no run of ours in the evidence
            r = await s.call_tool("show", {"skeleton_id": top["id"]})
            before = [x for x in r.structured_content["skeleton"]["runs"] if x["subject"] == "user"]
            assert before == []

            # 2. the agent writes the candidate (here: the fixture it would write)
            shutil.copy(DATA / "naive_softmax_online.py", work / "softmax_online.py")

            # 3. verify it, on the CPU interpreter, in the server's child process
            with anyio.fail_after(300):
                r = await s.call_tool("verify", {"original": "softmax.py", "candidate": "softmax_online.py",
                                                 "skeleton": top["id"], "device": "cpu", "timeout_s": 240},
                                      progress_callback=on_progress)
            assert not r.is_error, r.content[0].text
            v = r.structured_content
            assert v["schema"] == "skel.verify/1" and v["verdict"] == "correct" and v["recorded"] is True
            stages = {st["name"]: st for st in v["report"]["stages"]}
            assert stages["applied"]["status"] == "passed"
            assert any("online-softmax detected" in n for n in stages["applied"]["notes"])
            assert stages["same results"]["status"] == "passed"
            assert v["report"]["record"]["device"].startswith("cpu")

            # 4. the verdict is now evidence for the skeleton
            r = await s.call_tool("show", {"skeleton_id": top["id"]})
            runs = [x for x in r.structured_content["skeleton"]["runs"] if x["subject"] == "user"]
            assert len(runs) == 1 and runs[0]["verdict"] == "correct" and runs[0]["skeleton"] == top["id"]
            assert runs[0]["kernel"] == v["report"]["record"]["kernel"]
            assert "correct (user" in r.content[0].text

            # a wrong candidate is a verdict too, not a tool error
            online = (work / "softmax_online.py").read_text()
            assert "/ s\n" in online  # the sum the wrong candidate corrupts
            (work / "softmax_wrong.py").write_text(online.replace("/ s\n", "/ (s + 1.0)\n"))
            with anyio.fail_after(300):
                r = await s.call_tool("verify", {"original": "softmax.py", "candidate": "softmax_wrong.py",
                                                 "device": "cpu", "record": False, "timeout_s": 240})
            assert not r.is_error and r.structured_content["verdict"] == "wrong"

    anyio.run(agent)
    assert progress and progress == sorted(progress)  # notifications while it ran, in order
