"""shared-prefix-once's payoff: the walk's iterations (the array's length over the loop's step)
decide it: ≥ 64 pays, ≤ 8 does not, between or unknown asks."""

from skel.kernels.triton import extract_file
from skel.kernels.workload import Workload
from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN
from skel.skeletons.catalog.shared_prefix_once.skeleton import walk_length

SOURCE = '''
import triton
import triton.language as tl


@triton.jit
def walk_experts(counts, out, num_experts, BLOCK_M: tl.constexpr):
    tile = tl.program_id(0)
    start = 0
    for e in range(num_experts):
        start += tl.cdiv(tl.load(counts + e), BLOCK_M)
        if tile < start:
            tl.store(out + tile, e)


@triton.jit
def scan_sorted(sorted_ids, starts, n_sorted, BLOCK: tl.constexpr):
    exp_id = tl.program_id(0)
    cnt = 0
    for s in range(0, n_sorted, BLOCK):
        ids = tl.load(sorted_ids + s + tl.arange(0, BLOCK), mask=s + tl.arange(0, BLOCK) < n_sorted, other=-1)
        cnt += tl.sum((ids == exp_id).to(tl.int32))
        if cnt > 0:
            tl.store(starts + exp_id, s)


def launch(sorted_ids, starts, E):
    scan_sorted[(E,)](sorted_ids, starts, sorted_ids.numel(), BLOCK=128)
'''


def _kernels():
    return {k.name: k for k in extract_file(SOURCE, "ops/moe.py")}


def test_many_experts_pay_and_name_the_redundant_reads():
    p = walk_length(_kernels()["walk_experts"], Workload.parse(["num_experts=256", "programs=768"]))
    assert p.state == PAYS and "256 iterations" in p.reason and "196,608 entries" in p.reason


def test_a_handful_of_experts_does_not_pay():
    p = walk_length(_kernels()["walk_experts"], Workload.parse(["num_experts=8"]))
    assert p.state == DOES_NOT_PAY and "8 iterations" in p.reason


def test_the_step_comes_from_the_launch():
    # 65,536 sorted ids in 128-wide tiles (BLOCK=128 at the launch): 512 iterations
    p = walk_length(_kernels()["scan_sorted"], Workload.parse(["n_sorted=65536"]))
    assert p.state == PAYS and "512 iterations" in p.reason
    mid = walk_length(_kernels()["scan_sorted"], Workload.parse(["n_sorted=4096"]))  # 32 iterations
    assert mid.state == UNKNOWN and "32 iterations" in mid.reason


def test_without_the_length_it_asks_for_it():
    p = walk_length(_kernels()["walk_experts"], Workload())
    assert p.state == UNKNOWN and p.needs == "--shape num_experts=N"
