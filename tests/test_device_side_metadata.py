"""device-side-metadata's payoff: a read-back stalls the GPU for 10-50 µs a launch, which pays
in a serving engine (every decode step) and next to a short kernel, not next to a long one."""

from skel.kernels.model import KernelFacts, Param
from skel.kernels.workload import Workload
from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN
from skel.skeletons.catalog.device_side_metadata.skeleton import stall_vs_kernel


def _kernel(path="ops/segment.py"):
    return KernelFacts(name="seg_kernel", path=path, line_start=1, line_end=9, source="",
                       params=[Param("x_ptr"), Param("starts_ptr"), Param("D")])


def test_a_serving_engine_launch_pays_whatever_the_sizes():
    p = stall_vs_kernel(_kernel("python/sglang/srt/layers/attention/segment.py"), Workload())
    assert p.state == PAYS and "sglang" in p.reason


def test_a_short_kernel_pays():
    # 16M bf16 elements: 32 MB, ~10 µs at 3.35 TB/s
    p = stall_vs_kernel(_kernel(), Workload.parse(["x_ptr=4096x4096"]))
    assert p.state == PAYS and "16,777,216" in p.reason and "~10 µs" in p.reason


def test_a_kernel_streaming_gigabytes_hides_the_stall():
    # 2G bf16 elements: 4 GB, ~1,282 µs
    p = stall_vs_kernel(_kernel(), Workload.parse(["elements=131072*16384"]))
    assert p.state == DOES_NOT_PAY and "~1,282 µs" in p.reason


def test_between_the_bounds_and_without_sizes_it_is_unknown():
    # 256M bf16 elements: 512 MB, ~160 µs: between 100 and 1,000 µs
    mid = stall_vs_kernel(_kernel(), Workload.parse(["x_ptr=65536x4096"]))
    assert mid.state == UNKNOWN and "~160 µs" in mid.reason and "skel verify" in mid.reason
    none = stall_vs_kernel(_kernel(), Workload())
    assert none.state == UNKNOWN and none.needs == "--shape elements=N"
