"""How likely a suggestion is to be right: a probability fitted on judged verdicts.

People who did not write the ranking judged skel's suggestions on real kernels (sglang and
vLLM, ``benchmarks/retrieval/precision.json``). A logistic model over a few facts of the
(kernel, skeleton) pair turns those verdicts into a probability for a new pair:

- ``skeleton``: the skeleton's own judged rate on the fit's draws, smoothed toward the
  pooled rate (``SMOOTHING`` pseudo-verdicts), as log-odds: the strongest single signal;
- ``refine`` / ``near_miss`` / ``related``: the tier (a full match is the baseline);
- ``measured``: its verification runs here measured a speedup (validated or demonstrated);
- ``moves_data_only``, ``step_module``, ``deterministic``: what the kernel is (a copy or
  index kernel, a serving engine's per-step bookkeeping, a batch-invariant module);
- ``dot``, ``loop``: the kernel does matrix math, has a loop;
- ``fits``: how many techniques fit the kernel at all (log): a kernel every rule fits is
  one no rule singles out.

``benchmarks/retrieval/calibrate.py`` fits it on the earlier draws, checks it on the later
ones (observed rate per bin of predicted probability, printed as a curve) and writes
``skel/data/calibration.json``; nothing here is hand-set but the threshold, which that file
states with the precision and coverage it gave on the fit's draws. ``skel suggest`` shows a
suggestion when its probability reaches the threshold; ``--all`` shows the rest, marked.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from skel.errors import UsageError
from skel.skeletons.base import Status
from skel.skeletons.predicates.workload import deterministic_module, moves_data_only, step_module

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts

MODEL = Path(__file__).resolve().parent.parent / "data" / "calibration.json"
SMOOTHING = 4.0
FEATURES = ("bias", "skeleton", "refine", "near_miss", "related", "measured", "moves_data_only", "step_module",
            "deterministic", "dot", "loop", "fits")


@dataclass(frozen=True)
class Model:
    weights: dict[str, float]
    judged: dict[str, tuple[int, int]]  # skeleton -> (correct, judged) on the fit's draws
    pooled: float  # the pooled rate the per-skeleton rates are smoothed toward
    threshold: float
    about: str = ""

    def skeleton_rate(self, sid: str) -> float:
        c, n = self.judged.get(sid, (0, 0))
        return (c + SMOOTHING * self.pooled) / (n + SMOOTHING)

    def probability(self, x: dict[str, float]) -> float:
        z = sum(self.weights.get(f, 0.0) * v for f, v in x.items())
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def logit(p: float) -> float:
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


def kernel_features(kf: KernelFacts, fits: int) -> dict[str, float]:
    """The facts of the kernel the model reads, the same for every skeleton."""
    return {
        "moves_data_only": float(moves_data_only(kf)),
        "step_module": float(bool(step_module(kf))),
        "deterministic": float(bool(deterministic_module(kf))),
        "dot": float(any(c.name in ("tl.dot", "tl.dot_scaled") for c in kf.calls)),
        "loop": float(bool(kf.loops)),
        "fits": math.log1p(fits),
    }


def features(skeleton_rate: float, kind: str, basis: Status | None, kernel: dict[str, float]) -> dict[str, float]:
    """The model's inputs for one (kernel, skeleton) pair."""
    return {"bias": 1.0, "skeleton": logit(skeleton_rate), "refine": float(kind == "refine"),
            "near_miss": float(kind == "near-miss"), "related": float(kind == "related"),
            "measured": float(basis in (Status.VALIDATED, Status.DEMONSTRATED)), **kernel}


def threshold(m: Model) -> float:
    """The probability a suggestion needs to be listed: $SKEL_THRESHOLD when set (a session
    or a server that wants more, or fewer, answers than the default), else the model's."""
    raw = os.environ.get("SKEL_THRESHOLD", "").strip()
    if not raw:
        return m.threshold
    try:
        value = float(raw)
    except ValueError:
        raise UsageError(f"SKEL_THRESHOLD={raw!r}: a probability between 0 and 1") from None
    if not 0.0 <= value <= 1.0:
        raise UsageError(f"SKEL_THRESHOLD={raw!r}: a probability between 0 and 1")
    return value


@lru_cache(maxsize=1)
def model() -> Model | None:
    """The shipped model, or None when the file is missing or unreadable (every suggestion
    is then shown, with no probability, and a note says so)."""
    try:
        d = json.loads(MODEL.read_text())
        return Model(weights={k: float(v) for k, v in d["weights"].items()},
                     judged={k: (int(v[0]), int(v[1])) for k, v in d["judged"].items()},
                     pooled=float(d["pooled"]), threshold=float(d["threshold"]), about=d.get("about", ""))
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None
