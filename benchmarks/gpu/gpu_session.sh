#!/usr/bin/env bash
# Every GPU measurement of issue #7 in one run on the H200 (the device allows one command of
# at most 10 minutes): the catalog's example pairs, the verification suite, and the GPU-only
# cheater tests. Results land in $OUT (or benchmarks/results/gpu) and are committed under
# benchmarks/results/ with this script's console output.
#   usage: bash benchmarks/gpu/gpu_session.sh [catalog-budget-s] [suite-budget-s]
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-benchmarks/results/gpu}
mkdir -p "$OUT"
CAT=${1:-300}
SUITE=${2:-200}
# the GPU image has torch and Triton but not libcst (the catalog's detectors need it)
python -c "import libcst" 2>/dev/null || python -m pip install -q --no-deps .wheels/*.whl
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv | tee "$OUT/gpu.txt"
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$OUT/gpu.txt"
if [ "$CAT" != 0 ]; then
  timeout $((CAT + 60)) python -m benchmarks.evidence.verify_catalog --device cuda --budget-s "$CAT" --out "$OUT" ${ONLY:+--only $ONLY} \
    > "$OUT/catalog_console.txt" 2>&1; echo "verify_catalog exit $?" | tee -a "$OUT/gpu.txt"
fi
if [ "$SUITE" != 0 ]; then
  timeout $((SUITE + 90)) python -m benchmarks.evidence.verify_suite run --device cuda --budget-s "$SUITE" --out "$OUT" \
    > "$OUT/suite_console.txt" 2>&1; echo "verify_suite exit $?" | tee -a "$OUT/gpu.txt"
fi
SKEL_TEST_DEVICE=cuda timeout 120 python -m pytest -q -p no:cacheprovider tests/test_timing.py -k cheater \
  > "$OUT/cheaters_console.txt" 2>&1; echo "gpu cheater tests exit $?" | tee -a "$OUT/gpu.txt"
for f in "$OUT"/*_console.txt; do echo "== $f"; tail -n 3 "$f"; done
