"""Tuned launch-config tables kept beside kernel files.

Serving code tunes its kernels offline per GPU and shape and keeps the results as JSON
tables in a ``configs/`` folder next to the kernel file (vLLM / SGLang
``fused_moe_triton/configs/E=8,N=14336,device_name=....json``); the launcher unpacks an
entry with ``kernel[grid](..., **config)``. The extractor reads source text only, so
whoever knows a file's folder (the miner's sources, ``skel suggest``) looks the tables up
here and sets ``KernelFacts.config_tables``.
"""

from __future__ import annotations

import os
from pathlib import Path

#: The folder beside a kernel file where serving code keeps offline-tuned launch configs
#: (vLLM/SGLang `fused_moe_triton/configs/E=8,N=14336,device_name=....json`).
CONFIG_TABLE_DIR = "configs"


def config_tables_beside(path: str | os.PathLike) -> list[str]:
    """Names of the JSON tables in the ``configs/`` folder beside ``path`` (a file), at most
    eight, sorted; [] when there is none or it cannot be read."""
    folder = Path(path).parent / CONFIG_TABLE_DIR
    try:
        return sorted(p.name for p in folder.iterdir() if p.suffix == ".json")[:8]
    except OSError:
        return []


def config_tables_in(paths: list[str]) -> dict[str, list[str]]:
    """For a listing of relative paths (a git tree), each folder holding a ``configs/``
    folder of JSON tables -> their names (at most eight)."""
    out: dict[str, list[str]] = {}
    for rel in sorted(paths):
        parent, _, name = rel.rpartition("/")
        folder, _, last = parent.rpartition("/")
        if last == CONFIG_TABLE_DIR and name.endswith(".json") and len(out.setdefault(folder, [])) < 8:
            out[folder].append(name)
    return out
