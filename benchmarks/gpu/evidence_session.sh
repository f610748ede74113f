#!/usr/bin/env bash
# Issue #36 on one warm GPU machine, under the Triton the package installs (3.7.1), in runs of at most
# 10 minutes. The first run carries .wh/ (ignored by git; made by benchmarks/gpu/slim_triton.sh and
# `pip download` of libcst, tree-sitter + grammars, pybind11, ninja for CPython 3.12 — the image lacks
# them) and unpacks it to /root, which later runs on the same warm machine find again.
#
#   usage: OUT=... bash benchmarks/gpu/evidence_session.sh STEP...
#   steps: setup                 unpack Triton to /root/triton, install the wheels (idempotent)
#          cuda-build            compile every runnable CUDA pair's extension, in parallel
#          catalog:BUDGET[:IDS]  benchmarks.evidence.verify_catalog (IDS comma-separated; default all)
#          suite:BUDGET          benchmarks.evidence.verify_suite run (the suite: what makes `validated`)
#          cheaters              the GPU-only cheater tests
#          kernelbench           benchmarks/gpu/kernelbench_timing.py (skel's KernelBench timing vs the suite loop)
#          memcheck              compute-sanitizer on one example pair's first shape (the sanitizer path)
#          fooling[:NAMES[:JOBS]] benchmarks.verifier_fooling --device cuda (NAMES comma-separated; default all)
# Every step writes its console to $OUT/<step>_console.txt and one line to $OUT/gpu.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-benchmarks/results/gpu}
mkdir -p "$OUT"
export PYTHONPATH=/root/triton:$PWD PYTHONUNBUFFERED=1
export TORCH_EXTENSIONS_DIR=${TORCH_EXTENSIONS_DIR:-/root/torch-extensions}
PY=$(command -v python3 || command -v python)
log() { echo "$*" | tee -a "$OUT/gpu.txt"; }

step_setup() {
  if [ ! -f /root/triton/triton/__init__.py ]; then
    [ -f .wh/triton-3.7.1-slim.tar.xz ] || { log "setup: .wh/triton-3.7.1-slim.tar.xz was not carried"; return 1; }
    mkdir -p /root/triton && tar -xJf .wh/triton-3.7.1-slim.tar.xz -C /root/triton
  fi
  $PY -c "import libcst, tree_sitter_cuda, ninja" 2>/dev/null \
    || $PY -m pip install -q --no-deps .wh/*.whl 2>&1 | tail -2
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,memory.total --format=csv | tee -a "$OUT/gpu.txt"
  nvcc --version 2>/dev/null | tail -n 1 | tee -a "$OUT/gpu.txt"
  $PY -c "import torch, triton, libcst; print('torch', torch.__version__, 'triton', triton.__version__, triton.__file__)" \
    | tee -a "$OUT/gpu.txt"
}

step_cuda_build() {
  local ids t0=$SECONDS
  ids=$($PY -c "from benchmarks.evidence.cuda_pairs import CUDA_PAIRS; print(' '.join(CUDA_PAIRS))")
  for id in $ids; do
    timeout 300 $PY -m benchmarks.evidence.cuda_pairs build "$id" > "$OUT/build_$id.txt" 2>&1 &
  done
  wait
  for id in $ids; do cat "$OUT/build_$id.txt"; rm -f "$OUT/build_$id.txt"; done > "$OUT/cuda-build_console.txt"
  log "cuda-build: $(grep -c 'built in' "$OUT/cuda-build_console.txt") of $(echo $ids | wc -w) built in $((SECONDS - t0)) s"
}

step_catalog() {  # catalog:BUDGET[:IDS]
  local budget=$1 ids=${2:-}
  timeout $((budget + 60)) $PY -m benchmarks.evidence.verify_catalog --device cuda --budget-s "$budget" --out "$OUT" \
    ${ids:+--only "$ids"} > "$OUT/catalog_console.txt" 2>&1
  log "verify_catalog exit $? ($(grep -c '^\[' "$OUT/catalog_console.txt") pairs)"
}

step_suite() {
  timeout $(($1 + 90)) $PY -m benchmarks.evidence.verify_suite run --device cuda --budget-s "$1" --out "$OUT" \
    > "$OUT/suite_console.txt" 2>&1
  log "verify_suite exit $?"
}

run_step() {
  local s=$1 t0=$SECONDS
  case $s in
    setup) step_setup ;;
    cuda-build) step_cuda_build ;;
    catalog:*) IFS=: read -r _ b ids <<< "$s"; step_catalog "$b" "$ids" ;;
    suite:*) step_suite "${s#suite:}" ;;
    cheaters) SKEL_TEST_DEVICE=cuda timeout 150 $PY -m pytest -q -p no:cacheprovider tests/test_timing.py -k cheater \
                > "$OUT/cheaters_console.txt" 2>&1; log "cheaters exit $?" ;;
    kernelbench) timeout 150 $PY benchmarks/gpu/kernelbench_timing.py > "$OUT/kernelbench_console.txt" 2>&1
                 log "kernelbench exit $?" ;;
    memcheck) timeout 200 $PY -m skel.verifier.sanitizer --smoke > "$OUT/memcheck_console.txt" 2>&1
              log "memcheck exit $?" ;;
    fooling*) IFS=: read -r _ only jobs <<< "$s"  # fooling[:NAMES[:JOBS]]
              timeout 240 $PY -m benchmarks.verifier_fooling --device cuda ${only:+--only "$only"} --jobs "${jobs:-1}" \
                > "$OUT/fooling_console.txt" 2>&1
              log "fooling exit $?" ;;
    *) log "unknown step $s"; return 2 ;;
  esac
  log "step $s: $((SECONDS - t0)) s"
}

for s in "$@"; do run_step "$s"; done
for f in "$OUT"/*_console.txt; do echo "== $f"; tail -n 15 "$f"; done
