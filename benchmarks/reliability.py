"""Reliability figures: what skel survives, measured. One script, one section per area.

    python benchmarks/reliability.py fuzz [--files 10000] [--seed N]   # hostile sources (reliability_fuzz.py)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import reliability_fuzz  # noqa: E402 - beside this script


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="section", required=True)
    reliability_fuzz.add_parser(sub)
    a = ap.parse_args()
    if a.section == "fuzz":
        return reliability_fuzz.run(a)
    return 2


if __name__ == "__main__":
    sys.exit(main())
