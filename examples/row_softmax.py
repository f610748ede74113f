"""Example kernel for `skel suggest`: a row softmax over wide rows, written plainly.

It makes three passes over each row (max, sum of exponentials, normalise), reading the
row from memory three times and calling `tl.exp` twice per element. Ask skel what has
worked on kernels like this:

    skel suggest examples/row_softmax.py

Run it (CPU, correctness only; needs `pip install triton==3.7.1`):

    TRITON_INTERPRET=1 python examples/row_softmax.py
"""

import triton
import triton.language as tl


@triton.jit
def row_softmax_kernel(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * stride
    y_row = y_ptr + row * stride
    cols = tl.arange(0, BLOCK)

    # pass 1: the row maximum, for numerical stability
    m = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        x = tl.load(x_row + start + cols, mask=start + cols < n_cols, other=float("-inf"))
        m = tl.maximum(m, x.to(tl.float32))
    row_max = tl.max(m, axis=0)

    # pass 2: the sum of exponentials
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        x = tl.load(x_row + start + cols, mask=start + cols < n_cols, other=float("-inf"))
        s += tl.exp(x.to(tl.float32) - row_max)
    denom = tl.sum(s, axis=0)

    # pass 3: normalise and store
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=float("-inf"))
        y = tl.exp(x.to(tl.float32) - row_max) / denom
        tl.store(y_row + start + cols, y, mask=mask)


def row_softmax(x, block: int = 256):
    import torch

    y = torch.empty_like(x)
    row_softmax_kernel[(x.shape[0],)](x, y, x.shape[1], x.stride(0), BLOCK=block, num_warps=4)
    return y


if __name__ == "__main__":
    import torch

    x = torch.randn(8, 1000)
    y = row_softmax(x)
    torch.testing.assert_close(y, torch.softmax(x, dim=1), rtol=1e-5, atol=1e-6)
    print("row_softmax matches torch.softmax on 8x1000 fp32")
