import torch
import torch.nn as nn


class Model(nn.Module):
    """An activation chain: swish, then GELU, then a constant scale."""

    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x * torch.sigmoid(x)
        x = torch.nn.functional.gelu(x)
        return x * self.scale


batch_size = 16384
dim = 4096
scale = 2.0


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return [scale]
