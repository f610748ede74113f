import torch
import torch.nn as nn


class Model(nn.Module):
    """Mean cross-entropy loss of [batch_size, num_classes] logits against integer targets."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(predictions, targets)


batch_size = 4096
num_classes = 32000


def get_inputs():
    return [torch.randn(batch_size, num_classes) * 4, torch.randint(0, num_classes, (batch_size,))]


def get_init_inputs():
    return []
