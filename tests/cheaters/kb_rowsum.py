"""A KernelBench-format problem: fp32 row sums over 1,000 columns (values near 1,100).
KernelBench's tolerance (atol = rtol = 1e-2) is ~11 at that size: a row sum that loses a
whole element is inside it. Candidates: kb_rowsum_correct.py, kb_drops_last_column.py."""

import torch

batch_size = 16
n_cols = 1000


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.sum(x, dim=1)


def get_inputs():
    return [torch.rand(batch_size, n_cols) * 2.2]


def get_init_inputs():
    return []
