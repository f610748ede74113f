#!/usr/bin/env bash
# Sample profiles of skel's own example kernels on the GPU, and what `skel suggest --profile` makes
# of each (issue #10, "Profile-driven retrieval"). One command, under 8 minutes:
#   usage: bash benchmarks/gpu/profile_samples_gpu.sh OUT [budget-s]        (typically 4-5 min)
#
# Three runs of an example's *before* kernel (benchmarks/evidence/profile_driver.py):
#   softmax_vocab  online-softmax      vocab  (4096 x 128256 fp32, two passes over each row: memory-bound)
#   gemm_square    grouped-l2-swizzle  square (8192^3 fp16 tl.dot GEMM: compute-bound)
#   softmax_tiny   online-softmax      tiny   (5 x 1000: a few-µs launch: latency-bound)
# each under (a) ncu --csv --page raw (OUT/ncu_<run>.csv), (b) torch.profiler (OUT/trace_<run>.json),
# (c) proton when `import triton.profiler` works (OUT/proton_<run>.hatchet); then `skel suggest
# --profile FILE --json` on both examples' before_kernel with every profile (OUT/suggest_*.json), and
# a summary: the bound each profile gave, the metric that decided it, the top suggestions.
# Every step is timeout-guarded and a failure never stops the rest; OUT/status.txt lists what worked
# and what did not (ncu's ERR_NVGPUCTRPERM, counters not permitted, is named as such).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-${OUT:-benchmarks/results/gpu-profiles}}
BUDGET=${2:-360}  # seconds for the profiling steps; suggest and the summary come after (~1 min)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
export SKEL_HOME="$OUT/skel-home"  # no mined store: the catalog alone ranks, the same on every machine
PY=${PYTHON:-$(command -v python3 || command -v python)}
STATUS="$OUT/status.txt"
: > "$STATUS"
ok()   { echo "OK    $*" | tee -a "$STATUS"; }
bad()  { echo "FAIL  $*" | tee -a "$STATUS"; }
skip() { echo "SKIP  $*" | tee -a "$STATUS"; }
# the time a step may take: its own limit, or what is left of the budget
limit() { local left=$((BUDGET - SECONDS)); (( left < $1 )) && echo "$left" || echo "$1"; }

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv 2>&1
  $PY -c "import sys, torch, triton; print('python', sys.version.split()[0], 'torch', torch.__version__, \
'triton', triton.__version__)" 2>&1
  $PY -c "import libcst, tree_sitter; print('libcst, tree_sitter: importable')" 2>&1 | tail -n 1
  git rev-parse HEAD 2>/dev/null
} 2>&1 | tee "$OUT/env.txt"

RUNS=("softmax_vocab online-softmax vocab 3" "gemm_square grouped-l2-swizzle square 3"
      "softmax_tiny online-softmax tiny 20")
METRICS=$($PY -c "from skel.retriever.profile import NCU_METRICS; print(','.join(NCU_METRICS))" 2>/dev/null)
# the fewest that still classify, if ncu rejects a name of the full list
CORE="sm__throughput.avg.pct_of_peak_sustained_elapsed,gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
CORE+=",dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active"
CORE+=",gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread"
[ -n "$METRICS" ] || { bad "skel.retriever.profile does not import: using the core metric list"; METRICS=$CORE; }

NCU=$(command -v ncu 2>/dev/null || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
NCU_DENIED=""
if [ -z "$NCU" ]; then
  skip "ncu: not found (looked on PATH, /usr/local/cuda*/bin, /opt/nvidia/nsight-compute/*)"
else
  echo "ncu: $NCU ($($NCU --version 2>&1 | tail -n 1))" | tee -a "$OUT/env.txt"
fi
if $PY -c "import triton.profiler" > "$OUT/proton_import.log" 2>&1; then HAVE_PROTON=1; else
  HAVE_PROTON=""; skip "proton: import triton.profiler fails: $(tail -n 1 "$OUT/proton_import.log")"; fi

run_ncu() {  # name id shape reps metrics
  local name=$1 id=$2 shape=$3 reps=$4 metrics=$5 t
  t=$(limit 150)
  (( t > 20 )) || { skip "ncu $name: out of budget"; return 1; }
  local count=$((reps + 1)); (( count > 6 )) && count=6
  # --clock-control none: clocks as the kernels really run (locking them may need privileges too)
  timeout -k 10 "$t" "$NCU" --csv --page raw --clock-control none --metrics "$metrics" -k regex:before_kernel \
    -c "$count" \
    "$PY" -m benchmarks.evidence.profile_driver run "$id" "$shape" --reps "$reps" \
    > "$OUT/ncu_$name.csv" 2> "$OUT/ncu_$name.log"
  echo $? > "$OUT/ncu_$name.rc"
}

for run in "${RUNS[@]}"; do
  read -r name id shape reps <<< "$run"
  echo "== $name: $id $shape (t=${SECONDS}s)"
  # (a) Nsight Compute
  if [ -n "$NCU" ] && [ -z "$NCU_DENIED" ] && run_ncu "$name" "$id" "$shape" "$reps" "$METRICS"; then
    if grep -qs "ERR_NVGPUCTRPERM" "$OUT/ncu_$name.csv" "$OUT/ncu_$name.log"; then
      NCU_DENIED=1
      mv "$OUT/ncu_$name.csv" "$OUT/ncu_${name}_denied.txt" 2>/dev/null
      bad "ncu $name: ERR_NVGPUCTRPERM: this machine does not let the user read GPU performance counters \
(needs NVreg_RestrictProfilingToAdminUsers=0 or admin); no ncu profile from this machine"
    elif ! grep -qs '^"ID"' "$OUT/ncu_$name.csv" && grep -qsiE "metric|not found|invalid" "$OUT/ncu_$name.log" \
         "$OUT/ncu_$name.csv"; then
      echo "   ncu rejected a metric of the full list; again with the core list" | tee -a "$OUT/ncu_$name.log"
      mv "$OUT/ncu_$name.csv" "$OUT/ncu_${name}_fullmetrics.txt"
      run_ncu "$name" "$id" "$shape" "$reps" "$CORE"
    fi
    if [ -z "$NCU_DENIED" ]; then
      if grep -qs '^"ID"' "$OUT/ncu_$name.csv"; then
        ok "ncu $name: $(grep -c '^"[0-9]' "$OUT/ncu_$name.csv") launch rows -> ncu_$name.csv (exit $(cat "$OUT/ncu_$name.rc"))"
      else
        bad "ncu $name: no CSV (exit $(cat "$OUT/ncu_$name.rc"); 124 = timed out): $(grep -hE '==ERROR==|Error' \
"$OUT/ncu_$name.log" "$OUT/ncu_$name.csv" 2>/dev/null | head -n 2 | tr '\n' ' ')"
        mv "$OUT/ncu_$name.csv" "$OUT/ncu_${name}_failed.txt" 2>/dev/null
      fi
    fi
  fi
  # (b) torch.profiler chrome trace
  t=$(limit 90)
  if (( t > 15 )); then
    timeout -k 10 "$t" "$PY" -m benchmarks.evidence.profile_driver run "$id" "$shape" --reps "$reps" --mode torch \
      --out "$OUT/trace_$name.json" > "$OUT/trace_$name.log" 2>&1
    rc=$?
    if [ -s "$OUT/trace_$name.json" ]; then ok "torch.profiler $name -> trace_$name.json (exit $rc)"
    else bad "torch.profiler $name: no trace (exit $rc): $(tail -n 2 "$OUT/trace_$name.log" | tr '\n' ' ')"; fi
  else skip "torch.profiler $name: out of budget"; fi
  # (c) proton
  if [ -n "$HAVE_PROTON" ]; then
    t=$(limit 90)
    if (( t > 15 )); then
      timeout -k 10 "$t" "$PY" -m benchmarks.evidence.profile_driver run "$id" "$shape" --reps "$reps" --mode proton \
        --out "$OUT/proton_$name" > "$OUT/proton_$name.log" 2>&1
      rc=$?
      if [ -s "$OUT/proton_$name.hatchet" ]; then ok "proton $name -> proton_$name.hatchet (exit $rc)"
      else bad "proton $name: no .hatchet (exit $rc): $(tail -n 2 "$OUT/proton_$name.log" | tr '\n' ' ')"; fi
    else skip "proton $name: out of budget"; fi
  fi
done

echo "== skel suggest --profile (t=${SECONDS}s)"
for ex in online_softmax grouped_l2_swizzle; do
  kf="skel/skeletons/catalog/$ex/example.py"
  timeout 60 "$PY" -m skel.cli suggest "$kf" --kernel before_kernel -k 8 --json \
    > "$OUT/suggest_${ex}__none.json" 2> "$OUT/suggest_${ex}__none.err"
  rc=$?; (( rc <= 1 )) && ok "suggest $ex (no profile): exit $rc" || bad "suggest $ex (no profile): exit $rc: \
$(tail -n 1 "$OUT/suggest_${ex}__none.err")"
  for prof in "$OUT"/ncu_*.csv "$OUT"/trace_*.json "$OUT"/proton_*.hatchet; do
    [ -e "$prof" ] || continue
    base=$(basename "$prof"); base=${base%.*}
    timeout 60 "$PY" -m skel.cli suggest "$kf" --kernel before_kernel -k 8 --json --profile "$prof" \
      > "$OUT/suggest_${ex}__$base.json" 2> "$OUT/suggest_${ex}__$base.err"
    rc=$?
    if (( rc <= 1 )); then ok "suggest $ex --profile $base: exit $rc"
    else bad "suggest $ex --profile $base: exit $rc: $(tail -n 1 "$OUT/suggest_${ex}__$base.err")"; fi
  done
done
find "$OUT" -name '*.err' -empty -delete 2>/dev/null

echo "== summary (t=${SECONDS}s)"
"$PY" -m benchmarks.evidence.profile_driver summary "$OUT" 2>&1 | tee "$OUT/summary.txt"
echo "== status"
cat "$STATUS"
echo "done in ${SECONDS}s; files in $OUT"
