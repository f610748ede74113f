"""A Python thread's progress while a bound C++ call blocks, with and without releasing the GIL.

    python -m benchmarks.performance.gil_release                    # 300 ms calls, 9 runs each
    python -m benchmarks.performance.gil_release --ms 500 --runs 15

Builds the pybind11 demo extension of benchmarks/performance/gil_extension.py with the system C++
compiler (CPU only), then, for each blocking entry point, measures how fast a Python thread
counts while the main thread is inside the call, as a share of its free-running rate
(measured right before, with the main thread in `time.sleep`). Prints one markdown table:
median, min and max over the runs. The evidence behind the `gil-release-blocking-binding`
skeleton; tests/test_gil_release.py asserts the same on fewer runs.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
from pathlib import Path

from benchmarks.performance import gil_extension

WHAT = {
    ("spin", "holding"): "spin-wait, bound plainly (holds the GIL)",
    ("spin", "guard"): "spin-wait, `py::call_guard<py::gil_scoped_release>()`",
    ("spin", "scoped"): "spin-wait, `py::gil_scoped_release` local",
    ("sleep", "holding"): "sleep, bound plainly (holds the GIL)",
    ("sleep", "guard"): "sleep, `py::call_guard<py::gil_scoped_release>()`",
    ("sleep", "scoped"): "sleep, `py::gil_scoped_release` local",
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ms", type=float, default=300.0, help="length of each blocking call (ms)")
    ap.add_argument("--runs", type=int, default=9, help="runs per entry point")
    args = ap.parse_args()
    if args.ms <= 0 or args.runs <= 0:
        sys.exit("gil_release: --ms and --runs must be positive")
    with tempfile.TemporaryDirectory() as tmp:
        try:
            ext = gil_extension.build(Path(tmp))
        except gil_extension.BuildUnavailable as e:
            sys.exit(f"gil_release: cannot build the demo extension: {e}")
        load_before = os.getloadavg()[0]
        results = gil_extension.measure(ext, ms=args.ms, repeats=args.runs)
        load_after = os.getloadavg()[0]
    print(f"Python thread progress inside a {args.ms:g} ms bound C++ call, as a share of its "
          f"free-running rate ({args.runs} runs each; {os.cpu_count()} CPUs, load average "
          f"{load_before:.2f} before, {load_after:.2f} after; Python {platform.python_version()})\n")
    print("| blocking call | median | min | max |")
    print("|---|---:|---:|---:|")
    for p in results:
        print(f"| {WHAT[(p.kind, p.binding)]} | {p.median:.3f} | {min(p.runs):.3f} | {max(p.runs):.3f} |")


if __name__ == "__main__":
    main()
