#!/usr/bin/env bash
# The CUDA C++ example pairs (issue #9; four more in #36 item 7) on a GPU in one command, inside the
# device's 10-minute limit: compile the load_inline extensions in parallel, a smoke run (max error
# and a rough time per shape, raw), then the catalog verifier on them (correctness on every shape
# incl. the ones past 2**31 bytes, interleaved timing, verdicts) writing jsonl + md.
#   usage: [IDS=id,id] bash benchmarks/gpu/cuda_pairs_gpu.sh [OUT] [catalog-budget-s]   (typically ~6 min in all)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-${OUT:-benchmarks/results/gpu-cuda-pairs}}
BUDGET=${2:-240}
IDS=${IDS:-vectorized-128bit-access,warp-shuffle-reduction,cp-async-multistage,launch-bounds-occupancy,cuda-programmatic-dependent-launch,persistent-tile-scheduler,tma-store-epilogue,cuda-pragma-unroll-fixed-trip,cuda-half2-packed-math,cuda-fast-math-intrinsics,cuda-fp32-partial-accumulation,cuda-restrict-readonly-loads,cuda-smem-padding-bank-conflicts,cuda-int64-offsets,cuda-syncwarp-warp-private,cuda-smem-reuse-barrier,cuda-int4-dequant-magic,cuda-ldmatrix-fragment-loads}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
export TORCH_EXTENSIONS_DIR=${TORCH_EXTENSIONS_DIR:-/tmp/skel-torch-extensions}
PY=${PYTHON:-$(command -v python3 || command -v python)}  # the GPU image's python3 holds torch
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv
  nvcc --version | tail -n 2
  $PY -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  git rev-parse HEAD 2>/dev/null
} 2>&1 | tee "$OUT/gpu.txt"
t0=$SECONDS
for id in ${IDS//,/ }; do
  timeout 240 $PY -m benchmarks.evidence.cuda_pairs build "$id" > "$OUT/build_$id.txt" 2>&1 &
done
wait
echo "builds done in $((SECONDS - t0)) s" | tee -a "$OUT/gpu.txt"
for id in ${IDS//,/ }; do cat "$OUT/build_$id.txt"; rm -f "$OUT/build_$id.txt"; done > "$OUT/build_console.txt"
timeout 180 $PY -m benchmarks.evidence.cuda_pairs smoke ${IDS//,/ } > "$OUT/smoke_console.txt" 2>&1
echo "smoke exit $?" | tee -a "$OUT/gpu.txt"
timeout $((BUDGET + 60)) $PY -m benchmarks.evidence.verify_catalog --device cuda --only "$IDS" --budget-s "$BUDGET" \
  --out "$OUT" > "$OUT/catalog_console.txt" 2>&1
echo "verify_catalog exit $?" | tee -a "$OUT/gpu.txt"
for f in "$OUT"/*_console.txt; do echo "== $f"; tail -n 25 "$f"; done
