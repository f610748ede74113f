"""A KernelBench-format problem: linear then ReLU (parameters, so the state dict is copied)."""

import torch

batch_size = 4
features = 8


class Model(torch.nn.Module):
    def __init__(self, features):
        super().__init__()
        self.fc = torch.nn.Linear(features, features)

    def forward(self, x):
        return torch.relu(self.fc(x))


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features]
