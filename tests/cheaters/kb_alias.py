"""CHEATER (KernelBench): writes the result into its input and returns the input."""

import torch


class ModelNew(torch.nn.Module):
    def __init__(self, features):
        super().__init__()
        self.fc = torch.nn.Linear(features, features)

    def forward(self, x):
        x.copy_(torch.relu(self.fc(x)))
        return x
