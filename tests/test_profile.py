"""`skel suggest --profile`: reading ncu CSVs, PyTorch chrome traces and proton trees,
classifying a kernel's bottleneck, and what that does to the ranking.

The samples in tests/data/profiles/ are hand-made in each tool's format (ncu's header,
units row and thousands separators; torch's kernel events and deviceProperties; proton's
frame/metrics/children tree with its device table); benchmarks/gpu/profile_samples_gpu.sh makes
real ones on the H200."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from conftest import ROOT, run_skel
from skel.errors import InputError
from skel.retriever import profile as P
from skel.retriever.profile import read_profile

DATA = ROOT / "tests" / "data" / "profiles"
SOFTMAX = ROOT / "examples" / "row_softmax.py"


def bottleneck(name: str, kernel: str):
    b = read_profile(DATA / name).bottleneck(kernel)
    assert b is not None, f"{name} has no launch of {kernel}"
    return b


# --- Nsight Compute ------------------------------------------------------------------------

def test_ncu_memory_bound_names_dram_and_pools_launches():
    b = bottleneck("ncu_memory.csv", "row_softmax_kernel")
    assert (b.bound, b.metric, b.format, b.counters) == ("memory", P.DRAM, "ncu", True)
    # two launches, percentages weighted by their durations (412.352 and 410.880 µs)
    assert b.launches == 2 and b.launched == ["row_softmax_kernel"]
    assert b.value == pytest.approx((83.12 * 412.352 + 82.90 * 410.880) / (412.352 + 410.880), abs=1e-3)
    assert b.duration_us == pytest.approx((412.352 + 410.880) / 2, abs=1e-3)
    note = b.note()
    assert "memory-bound (dram__throughput 83.0 % of peak" in note
    assert "ranks techniques that address memory first" in note


def test_ncu_compute_bound():
    b = bottleneck("ncu_compute.csv", "matmul_kernel")
    assert (b.bound, b.metric, b.value) == ("compute", P.SM, 78.4)
    assert "memory 52.7 %" in b.reason


def test_ncu_short_launch_is_latency_bound():
    b = bottleneck("ncu_latency.csv", "add_kernel")
    assert (b.bound, b.metric, b.unit) == ("latency", "duration per launch", " µs")
    assert b.value == pytest.approx((4.512 + 4.480) / 2, abs=1e-3)


def test_ncu_occupancy_bound_by_registers_inside_a_cxx_name():
    # the launched name is a demangled template instance; the kernel is found inside it
    b = bottleneck("ncu_occupancy.csv", "attn_fwd")
    assert b.launched == ["void attn_fwd<128, 64>(float const*, float*, int)"]
    assert (b.bound, b.metric, b.value) == ("occupancy", P.OCCUPANCY, 11.4)
    assert "capped by registers (1 block per SM)" in b.reason


def test_ncu_low_everything_is_latency_stalls_named_by_the_busier_unit():
    b = bottleneck("ncu_stalls.csv", "_fwd_kernel_stage1")
    assert (b.bound, b.metric, b.value) == ("latency", P.MEMORY, 47.9)
    assert "neither reaches 60 % of peak" in b.reason


def test_ncu_tiny_grid_is_latency_bound(tmp_path):
    csv = tmp_path / "tiny_grid.csv"
    csv.write_text(
        '"ID","Kernel Name","Grid Size","device__attribute_multiprocessor_count",'
        f'"{P.DRAM}","{P.MEMORY}","{P.DURATION}","{P.GRID}","{P.WAVES}","{P.SM}","{P.OCCUPANCY}"\n'
        '"","","","","%","%","usecond","","","%","%"\n'
        '"0","split_kernel","(8, 1, 1)","132","12.0","20.5","55.0","8","0.06","9.5","6.0"\n')
    b = read_profile(csv).bottleneck("split_kernel")
    assert (b.bound, b.metric, b.value) == ("latency", P.WAVES, 0.06)
    assert "8 CTAs on 132 SMs" in b.reason


def test_ncu_long_format_and_time_units():
    b = bottleneck("ncu_long.csv", "row_softmax_kernel")
    assert (b.bound, b.metric, b.value) == ("memory", P.DRAM, 81.7)
    assert b.duration_us == pytest.approx(415.23)  # "usecond" in the Metric Unit column


def test_ncu_without_counters_says_so():
    b = bottleneck("ncu_no_counters.csv", "row_softmax_kernel")
    assert b.bound is None and b.counters is False
    assert b.duration_us == pytest.approx(410.0)  # 0.41 msecond
    assert P.NO_COUNTERS in b.note()


def test_ncu_metric_list_covers_what_the_rules_read():
    for name in (P.SM, P.MEMORY, P.DRAM, P.OCCUPANCY, P.DURATION, P.GRID, P.WAVES, P.REGISTERS, P.SMS,
                 *P.LIMITS.values()):
        assert name in P.NCU_METRICS


# --- chrome trace --------------------------------------------------------------------------

def test_chrome_trace_has_times_only():
    b = bottleneck("trace_row_softmax.json", "row_softmax_kernel")
    assert (b.format, b.bound, b.counters, b.launches) == ("chrome-trace", None, False, 2)
    note = b.note()
    assert "bottleneck unknown" in note and P.NO_COUNTERS in note
    assert "est. achieved occupancy 88.0 %" in note


def test_chrome_trace_short_kernel_is_latency_bound_from_its_duration():
    b = bottleneck("trace_add.json", "add_kernel")
    assert (b.bound, b.metric, b.value, b.counters) == ("latency", "duration per launch", 4.5, False)
    assert "no hardware counters in this profile: the duration alone decides" in b.note()
    # the other kernel of the softmax trace, 2.9 µs, likewise
    assert bottleneck("trace_row_softmax.json", "triton_poi_fused_add_0").bound == "latency"


def test_chrome_trace_tiny_grid_without_counters(tmp_path):
    data = json.loads((DATA / "trace_row_softmax.json").read_text())
    for e in data["traceEvents"]:
        if e.get("cat") == "kernel":
            e["args"]["grid"] = [8, 1, 1]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(data))
    b = read_profile(path).bottleneck("row_softmax_kernel")
    assert (b.bound, b.metric) == ("latency", "grid / SMs")
    assert b.value == pytest.approx(8 / 132, abs=1e-3)


def test_chrome_trace_gzipped(tmp_path):
    path = tmp_path / "trace.json.gz"
    path.write_bytes(gzip.compress((DATA / "trace_add.json").read_bytes()))
    assert read_profile(path).bottleneck("add_kernel").bound == "latency"


# --- proton --------------------------------------------------------------------------------

def test_proton_memory_bound_from_its_bytes():
    b = bottleneck("proton_memory.hatchet", "row_softmax_kernel")
    assert (b.format, b.bound, b.metric, b.counters) == ("proton", "memory", "proton:memory", False)
    assert b.value == pytest.approx(80.0, abs=0.01) and b.launches == 4
    assert "bytes/time vs peak bandwidth 80.0 % of peak" in b.note()
    assert "no hardware counters in this profile: from the kernel's own flops/bytes" in b.note()


def test_proton_compute_bound_from_its_flops():
    b = bottleneck("proton_compute.hatchet", "matmul_kernel")
    assert (b.bound, b.metric) == ("compute", "proton:compute")
    assert b.value == pytest.approx(70.0, abs=0.01)


def test_proton_without_metrics_times_only():
    p = read_profile(DATA / "proton_times.hatchet")
    assert p.names() == ["row_softmax_kernel", "add_kernel"]
    slow = p.bottleneck("row_softmax_kernel")
    assert slow.bound is None and P.NO_COUNTERS in slow.note()
    assert slow.duration_us == pytest.approx(412.0)  # 2.06 ms over 5 launches
    fast = p.bottleneck("add_kernel")
    assert (fast.bound, fast.value) == ("latency", 4.5)


# --- matching and bad input ----------------------------------------------------------------

def test_matching_whole_identifiers_exact_first_and_mangled():
    p = P.Profile("x", "ncu", [P.Launch("row_softmax_kernel"), P.Launch("_Z8attn_fwdPfS_i"),
                               P.Launch("kernel"), P.Launch("kernel_v2")], counters=False)
    assert [lc.name for lc in p.find("kernel")] == ["kernel"]  # exact wins over substrings
    assert p.find("softmax") == []  # inside an identifier is not a match
    assert [lc.name for lc in p.find("attn_fwd")] == ["_Z8attn_fwdPfS_i"]
    assert p.bottleneck("nope") is None
    assert "no launch of nope in x (it holds: row_softmax_kernel, _Z8attn_fwdPfS_i, kernel, kernel_v2)" \
        in p.missing_note("nope")


@pytest.mark.parametrize("content, message", [
    (b"just some text\n", "no ncu CSV header"),
    (b'{"foo": 1}', "neither a chrome trace"),
    (b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "dur": 3}]}', "no GPU kernel event"),
    (b'[{"frame": {"name": "ROOT"}, "metrics": {}, "children": []}]', "no kernel"),
    (b"NVIDIA Nsight Compute report \x00\xff\xfe", "not a text profile"),
    (b'{"traceEvents": [', "not valid JSON"),
])
def test_bad_profiles_fail_in_one_line(tmp_path, content, message):
    path = tmp_path / "bad.prof"
    path.write_bytes(content)
    with pytest.raises(InputError, match=message) as exc:
        read_profile(path)
    assert "\n" not in str(exc.value)
    with pytest.raises(InputError, match="no such profile file"):
        read_profile(tmp_path / "missing.csv")


# --- the ranking ---------------------------------------------------------------------------

def _compute_profile_of_softmax(tmp_path: Path) -> Path:
    """The compute-bound sample, its kernel renamed to the softmax example's."""
    path = tmp_path / "ncu_compute_softmax.csv"
    path.write_text((DATA / "ncu_compute.csv").read_text().replace("matmul_kernel", "row_softmax_kernel"))
    return path


def _ranked(profile_path: Path, bound: str | None = None):
    from skel.retriever.suggest import suggest

    (r,) = suggest(SOFTMAX, None, k=50, bound=bound, profile=read_profile(profile_path))
    return r


def test_a_memory_bound_profile_ranks_memory_techniques_higher_than_a_compute_bound_one(tmp_path):
    from skel.skeletons.registry import get
    from skel.retriever.suggest import WEIGHTS, suggest

    # the softmax with a temperature, so a compute-only technique (exp2 folding into the
    # scale) fits it beside memory-only ones
    scaled = tmp_path / "row_softmax.py"
    scaled.write_text(SOFTMAX.read_text().replace("tl.exp(x.to(tl.float32) - row_max)",
                                                  "tl.exp((x.to(tl.float32) - row_max) * inv_temp)")
                      .replace("(x_ptr, y_ptr, n_cols, stride,", "(x_ptr, y_ptr, n_cols, stride, inv_temp,"))

    def ranked(profile_path):
        (r,) = suggest(scaled, None, k=50, profile=read_profile(profile_path))
        return r

    memory = ranked(DATA / "ncu_memory.csv")
    compute = ranked(_compute_profile_of_softmax(tmp_path))
    assert memory.profile["bound"] == "memory" and compute.profile["bound"] == "compute"
    assert memory.notes[0].startswith("profile (ncu, 2 launches of row_softmax_kernel): memory-bound")
    rank_m = {s.id: i for i, s in enumerate(memory.suggestions)}
    rank_c = {s.id: i for i, s in enumerate(compute.suggestions)}
    by_id_m = {s.id: s for s in memory.suggestions}
    by_id_c = {s.id: s for s in compute.suggestions}
    assert rank_m.keys() == rank_c.keys()
    memory_only = [i for i in rank_m if "memory" in get(i).helps and "compute" not in get(i).helps]
    compute_only = [i for i in rank_m if "compute" in get(i).helps and "memory" not in get(i).helps]
    assert memory_only and compute_only
    for sid in memory_only:  # the bound component is the whole difference, and it is the profile's
        assert by_id_m[sid].components["bound"] == 1.0 and by_id_c[sid].components["bound"] == 0.0
        assert by_id_m[sid].score == pytest.approx(by_id_c[sid].score + WEIGHTS["bound"], abs=2e-4)
        assert rank_m[sid] <= rank_c[sid]
    for sid in compute_only:
        assert rank_m[sid] >= rank_c[sid]
    # and it changes the order, not only the scores: a memory technique moves up
    assert any(rank_m[sid] < rank_c[sid] for sid in memory_only)


def test_bound_given_wins_over_the_profile():
    r = _ranked(DATA / "ncu_memory.csv", bound="compute")
    assert r.profile["bound"] == "memory"  # what the profile said is still reported
    assert "--bound compute given, it wins over the profile" in r.notes[0]
    from skel.skeletons.registry import get

    for s in r.suggestions:
        assert s.components["bound"] == (1.0 if "compute" in get(s.id).helps else 0.0)


def test_a_kernel_missing_from_the_profile_ranks_on_code_alone():
    plain = _ranked_plain()
    r = _ranked(DATA / "ncu_compute.csv")  # holds matmul_kernel only
    assert r.profile is None
    assert r.notes[0] == ("profile: no launch of row_softmax_kernel in ncu_compute.csv (it holds: matmul_kernel): "
                          "code-only ranking")
    assert [s.id for s in r.suggestions] == [s.id for s in plain.suggestions]
    assert [s.score for s in r.suggestions] == [s.score for s in plain.suggestions]


def test_a_profile_without_counters_ranks_on_code_alone():
    plain = _ranked_plain()
    r = _ranked(DATA / "trace_row_softmax.json")
    assert r.profile["bound"] is None and "code-only ranking" in r.notes[0]
    assert [s.score for s in r.suggestions] == [s.score for s in plain.suggestions]


def _ranked_plain():
    from skel.retriever.suggest import suggest

    (r,) = suggest(SOFTMAX, None, k=50)
    return r


# --- the service API and the command line -------------------------------------------------

def test_api_suggest_reads_the_profile(tmp_path):
    from skel import api

    shutil.copy(DATA / "proton_memory.hatchet", tmp_path / "p.hatchet")
    (r,) = api.suggest(SOFTMAX, profile=tmp_path / "p.hatchet", k=3)
    assert r.profile["bound"] == "memory" and r.profile["format"] == "proton"
    with pytest.raises(InputError, match="no such profile file"):
        api.suggest(SOFTMAX, profile=tmp_path / "absent.csv")


def test_cli_profile_json_and_errors():
    res = run_skel("suggest", str(SOFTMAX), "--profile", str(DATA / "ncu_memory.csv"), "--json")
    assert res.returncode == 0, res.stderr
    (k,) = json.loads(res.stdout)["kernels"]
    assert k["profile"]["bound"] == "memory" and k["profile"]["metric"] == P.DRAM
    assert k["notes"][0].startswith("profile (ncu")
    bad = run_skel("suggest", str(SOFTMAX), "--profile", str(SOFTMAX))  # a Python file is no profile
    assert bad.returncode == 2
    assert bad.stderr.startswith("skel: error: ") and bad.stderr.count("\n") == 1


H200 = ROOT / "benchmarks" / "results" / "gpu-2026-12-01-profiles"


def test_h200_ncu_profiles_move_the_ranking_the_way_their_bottleneck_says():
    """Real ncu profiles from the H200 (benchmarks/results/gpu-2026-12-01-profiles, COMMAND.md there):
    online-softmax's own `before_kernel` run memory-bound (vocab), and the same kernel ranked
    against the compute-bound GEMM example's profile (its kernel is a `before_kernel` too): the
    technique that helps memory leads with the first, one that helps compute with the second."""
    from skel.api import suggest

    example = ROOT / "skel" / "skeletons" / "catalog" / "online_softmax" / "example.py"
    (mem,) = suggest(example, kernel="before_kernel", profile=str(H200 / "ncu_softmax_vocab.csv"))
    (comp,) = suggest(example, kernel="before_kernel", profile=str(H200 / "ncu_gemm_square.csv"))
    assert (mem.profile["bound"], comp.profile["bound"]) == ("memory", "compute")
    assert mem.profile["metric"].startswith("dram__throughput") and mem.profile["value"] > 90
    assert comp.profile["metric"].startswith("sm__throughput") and comp.profile["value"] > 80
    assert mem.suggestions[0].id == "online-softmax"  # helps memory
    top = comp.suggestions[0]
    from skel.skeletons.registry import get

    assert top.id != "online-softmax" and "compute" in get(top.id).helps and top.components["bound"] == 1.0
