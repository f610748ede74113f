"""HONEST: launch configuration memoised per row length — the block and warp count are
picked once per N and kept in a dict; results are never cached (host-side caching that
must not be mistaken for output replay).
Runs: CPU and GPU.
"""

import triton
import triton.language as tl

_CONFIG: dict[int, tuple[int, int]] = {}


@triton.jit
def cfg_kernel(x_ptr, out_ptr, x_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_stride
    out_row = out_ptr + row * out_stride
    offs = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        m = tl.maximum(m, tl.load(x_row + start + offs, mask=start + offs < n_cols, other=float("-inf")))
    row_max = tl.max(m, axis=0)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        v = tl.load(x_row + start + offs, mask=start + offs < n_cols, other=float("-inf"))
        s += tl.exp(v - row_max)
    row_sum = tl.sum(s, axis=0)
    for start in range(0, n_cols, BLOCK):
        mask = start + offs < n_cols
        v = tl.load(x_row + start + offs, mask=mask, other=float("-inf"))
        tl.store(out_row + start + offs, tl.exp(v - row_max) / row_sum, mask=mask)


def _config(n_cols: int) -> tuple[int, int]:
    if n_cols not in _CONFIG:
        block = min(1024, triton.next_power_of_2(n_cols))
        _CONFIG[n_cols] = (block, 4 if block <= 256 else 8)
    return _CONFIG[n_cols]


def run(x, out):
    block, warps = _config(x.shape[1])
    cfg_kernel[(x.shape[0],)](x, out, x.stride(0), out.stride(0), x.shape[1], BLOCK=block, num_warps=warps)
