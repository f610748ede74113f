"""CHEATER: no Triton kernel: the launcher calls torch and copies the answer out (a library
fallback; right by construction)."""


def run(x, out):
    out.copy_(x.sum(dim=1))
