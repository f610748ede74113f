"""Deterministic sample of 50 (dev case, suggested skeleton) pairs for the hand precision check.

    python -m benchmarks.retrieval.releases.run --split dev --json /tmp/dev_results.json
    python -m benchmarks.retrieval.releases.precision_sample /tmp/dev_results.json

Verdicts are recorded by hand in precision_sample.json next to this file. A verdict is
about a (case kernel, skeleton) pair — does the technique make sense for that kernel and
is it absent — so it stays valid when ranking changes; when the current top 5 brings new
pairs into the sample, this script lists them as "unjudged" and they must be judged before
the precision is quoted.
"""
import json
import random
import sys
from pathlib import Path

SEED, N = 20261130, 50
VERDICTS = Path(__file__).with_name("precision_sample.json")


def sample(results_path: str) -> list[tuple[str, str, int]]:
    cases = json.load(open(results_path))["cases"]
    pairs = sorted((c["id"], s, rank) for c in cases for rank, s in enumerate(c["top5"], 1))
    return random.Random(SEED).sample(pairs, min(N, len(pairs)))


def precision(pairs: list[tuple[str, str, int]], verdicts_path: Path = VERDICTS) -> dict:
    """Precision of the sampled pairs from the recorded verdicts; lists unjudged pairs."""
    recorded = {(v["case"], v["skeleton"]): v["verdict"] for v in json.loads(verdicts_path.read_text())["verdicts"]}
    got = [recorded.get((case, sk)) for case, sk, _ in pairs]
    correct, incorrect = got.count("correct"), got.count("incorrect")
    return {
        "sampled": len(pairs), "correct": correct, "incorrect": incorrect, "unclear": got.count("unclear"),
        "unjudged": [(c, s) for (c, s, _), v in zip(pairs, got) if v is None],
        "precision": round(correct / (correct + incorrect), 3) if correct + incorrect else None,
    }


if __name__ == "__main__":
    pairs = sample(sys.argv[1])
    for case, skeleton, rank in pairs:
        print(f"{case}\t{skeleton}\t{rank}")
    print(json.dumps(precision(pairs), indent=1))
