"""benchmarks/evidence/pending.py: the pairs a GPU still lacks, and the device command for them."""

from __future__ import annotations

from benchmarks.evidence.pending import command, pending
from benchmarks.evidence.verify_catalog import example_ids


def test_a_gpu_with_no_run_lacks_every_runnable_pair():
    p = pending("H300", "3.7")
    runnable = set(p["cuda"]) | set(p["triton"])
    assert runnable | set(p["template_only"]) == set(example_ids())
    assert not runnable & set(p["template_only"])
    assert "online-softmax" in p["triton"] and "launch-bounds-occupancy" in p["cuda"]
    # the fixes come first: a short budget still reaches them
    assert p["triton"].index("int64-offsets") < p["triton"].index("online-softmax")
    cmd = command(p)
    assert cmd.startswith("OUT=$OUT bash benchmarks/gpu/evidence_session.sh setup cuda-build catalog:400:")
    assert cmd.endswith(p["triton"][-1])


def test_a_pair_run_on_the_h200_under_3_7_is_not_pending_there():
    p = pending("H200", "3.7")
    assert "online-softmax" not in p["triton"]  # shipped: its example ran on the H200 under Triton 3.7
    assert "online-softmax" in pending("H200", "3.9")["triton"]  # another Triton: to run again
    assert command({"cuda": [], "triton": [], "template_only": ["x"]}) == ""
