#!/usr/bin/env bash
# Re-verify the catalog's example pairs on the GPU under another Triton than the image's (issue #36,
# item 1). One run carries at most 64 MiB and paths carried by one run are gone in the next, so the
# wheel arrives in parts over consecutive runs of one warm machine, each run copying its part out of
# the repository into $PARTS (default /root/parts); libcst wheels (the image lacks it) come in .wh/.
# See benchmarks/results/gpu-2026-12-07-triton371-h100/COMMAND.md for the run made with it.
#   usage: OUT=... bash benchmarks/gpu/triton_upgrade_session.sh WHEEL_NAME CATALOG_BUDGET_S
set -uo pipefail
cd "$(dirname "$0")/../.."
WHEEL=$1
BUDGET=${2:-420}
OUT=${OUT:-benchmarks/results/gpu}
mkdir -p "$OUT" /tmp/wheels
cat "${PARTS:-/root/parts}"/part* > "/tmp/wheels/$WHEEL"
sha256sum "/tmp/wheels/$WHEEL" | tee "$OUT/wheel.txt"
PY=$(python -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
python -m pip install -q --no-deps "/tmp/wheels/$WHEEL" .wh/libcst-*-"$PY"-*.whl 2>&1 | tail -3 | tee -a "$OUT/wheel.txt"
mkdir -p .wheels && cp .wh/libcst-*-"$PY"-*.whl .wheels/ 2>/dev/null
OUT="$OUT" bash benchmarks/gpu/gpu_session.sh "$BUDGET" 0
