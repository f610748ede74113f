"""HONEST: two kernels and a reused workspace — a statistics kernel writes each row's max and
1/sum into a float32 workspace kept across calls (grown when a call needs more rows, and
fully rewritten every call), then an elementwise kernel normalises over a 2-D grid.
Runs: CPU and GPU.
"""

import torch
import triton
import triton.language as tl

BLOCK = 64
_WS: dict[str, torch.Tensor] = {}


@triton.jit
def stats_kernel(x_ptr, ws_ptr, x_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_stride
    offs = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        m = tl.maximum(m, tl.load(x_row + start + offs, mask=start + offs < n_cols, other=float("-inf")))
    row_max = tl.max(m, axis=0)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        v = tl.load(x_row + start + offs, mask=start + offs < n_cols, other=float("-inf"))
        s += tl.exp(v - row_max)
    tl.store(ws_ptr + 2 * row, row_max)
    tl.store(ws_ptr + 2 * row + 1, 1.0 / tl.sum(s, axis=0))


@triton.jit
def normalise_kernel(x_ptr, ws_ptr, out_ptr, x_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    row_max = tl.load(ws_ptr + 2 * row)
    inv = tl.load(ws_ptr + 2 * row + 1)
    v = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=float("-inf"))
    tl.store(out_ptr + row * out_stride + cols, tl.exp(v - row_max) * inv, mask=mask)


def _workspace(n_rows: int, device: torch.device) -> torch.Tensor:
    ws = _WS.get("stats")
    if ws is None or ws.numel() < 2 * n_rows or ws.device != device:
        ws = torch.empty(2 * n_rows, dtype=torch.float32, device=device)
        _WS["stats"] = ws
    return ws


def run(x, out):
    n_rows, n_cols = x.shape
    ws = _workspace(n_rows, x.device)
    stats_kernel[(n_rows,)](x, ws, x.stride(0), n_cols, BLOCK=BLOCK)
    normalise_kernel[(n_rows, triton.cdiv(n_cols, BLOCK))](x, ws, out, x.stride(0), out.stride(0), n_cols,
                                                           BLOCK=BLOCK)
