"""Deterministic sample of 50 (dev case, suggested skeleton) pairs for the hand precision check.

    python benchmarks/retrieval/run.py --split dev --json /tmp/dev_results.json
    python benchmarks/retrieval/precision_sample.py /tmp/dev_results.json

Verdicts are recorded in precision_sample.json next to this file.
"""
import json
import random
import sys

SEED, N = 20261130, 50


def sample(results_path: str) -> list[tuple[str, str, int]]:
    cases = json.load(open(results_path))["cases"]
    pairs = sorted((c["id"], s, rank) for c in cases for rank, s in enumerate(c["top5"], 1))
    return random.Random(SEED).sample(pairs, min(N, len(pairs)))


if __name__ == "__main__":
    for case, skeleton, rank in sample(sys.argv[1]):
        print(f"{case}\t{skeleton}\t{rank}")
