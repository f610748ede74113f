#!/usr/bin/env bash
# The README's two set-up commands on a fresh clone while another job loads the machine (issue #37:
# "a test must not depend on the machine being idle"). The commands are read from the README's
# Set-up block, not retyped here, so this checks what a newcomer runs.
#
#   usage: bash benchmarks/reliability/readme_under_load.sh [REPO] [LOAD_COMMAND]
#   REPO          what to clone (default: this checkout's repository)
#   LOAD_COMMAND  the other job (default: one busy Python loop per core, for the whole run)
# Prints each command's exit code and wall time, then the load's; exit 0 only if both commands passed.
set -uo pipefail
SRC=${1:-$(git -C "$(dirname "$0")/../.." rev-parse --show-toplevel)}
LOAD=${2:-"for i in \$(seq \$(nproc)); do python3 -c 'while True: pass' & done; wait"}
WORK=$(mktemp -d /tmp/skel-readme-load.XXXXXX)
git clone -q "$SRC" "$WORK/skel" && cd "$WORK/skel" || exit 2
echo "clone: $(git log --oneline -1)   load: $LOAD   cores: $(nproc)"
mapfile -t CMDS < <(awk '/^## Set-up/{s=1} s&&/^```bash/{b=1;next} b&&/^```/{exit} b&&NF&&!/^#/' README.md)
[ "${#CMDS[@]}" = 2 ] || { echo "expected two commands in the README's Set-up block, found ${#CMDS[@]}"; exit 2; }
setsid bash -c "$LOAD" > "$WORK/load.log" 2>&1 &
LOAD_PID=$!
trap 'kill -- -$LOAD_PID 2>/dev/null' EXIT
sleep 2
rc_all=0
for i in 0 1; do
  t0=$(date +%s)
  bash -c "${CMDS[$i]}" > "$WORK/cmd$((i + 1)).log" 2>&1
  rc=$?
  echo "command $((i + 1)): exit $rc in $(( $(date +%s) - t0 )) s; last lines:"
  tail -n 4 "$WORK/cmd$((i + 1)).log" | sed 's/^/    /'
  [ $rc = 0 ] || rc_all=1
done
echo "load job still running at the end: $(kill -0 $LOAD_PID 2>/dev/null && echo yes || echo no); logs in $WORK"
exit $rc_all
