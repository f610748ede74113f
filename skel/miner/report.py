"""What a mine reports (``MineReport``), in a module of its own: the pipeline
(skel/miner/mine.py) fills one in, and the re-mine short cut (skel/miner/stamps.py) gives
the saved one back without importing the pipeline."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from skel.miner.walk import Skipped


@dataclass
class MineReport:
    source: str
    version: str
    root: str
    files: int = 0  # .py files seen
    kernel_files: int = 0  # files holding at least one kernel
    parsed: int = 0  # files parsed this run
    cached: int = 0  # files whose facts came from the local cache
    unchanged: int = 0  # files already in the store with the same hash
    removed: int = 0  # files gone since the last mine
    kernels: int = 0  # kernels now in the store for this source
    kernels_written: int = 0
    techniques: Counter = field(default_factory=Counter)
    skipped: list[Skipped] = field(default_factory=list)
    seconds: float = 0.0
    parse_seconds: float = 0.0
    # with replace=True, the source of this name mined from elsewhere that was deleted
    # first: {"origin", "root", "kernels", "files"}; None when nothing was replaced
    replaced: dict | None = None

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["techniques"] = dict(sorted(self.techniques.items(), key=lambda kv: (-kv[1], kv[0])))
        d["skipped"] = [s.__dict__ for s in self.skipped]
        return d
