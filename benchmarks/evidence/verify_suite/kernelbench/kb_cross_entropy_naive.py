import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def cross_entropy_kernel(logits_ptr, target_ptr, loss_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    row_ptr = logits_ptr + row * stride
    offs = tl.arange(0, BLOCK)
    m = float("-inf")
    for start in range(0, n_cols, BLOCK):
        x = tl.load(row_ptr + start + offs, mask=start + offs < n_cols, other=float("-inf"))
        m = tl.maximum(m, tl.max(x, axis=0))
    s = 0.0
    for start in range(0, n_cols, BLOCK):
        x = tl.load(row_ptr + start + offs, mask=start + offs < n_cols, other=float("-inf"))
        s += tl.sum(tl.exp(x - m), axis=0)
    t = tl.load(target_ptr + row)
    tl.store(loss_ptr + row, m + tl.log(s) - tl.load(row_ptr + t))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        predictions = predictions.contiguous()
        loss = torch.empty(predictions.shape[0], dtype=torch.float32, device=predictions.device)
        cross_entropy_kernel[(predictions.shape[0],)](predictions, targets, loss, predictions.stride(0),
                                                      predictions.shape[1], BLOCK=2048)
        return loss.mean()
