#!/usr/bin/env bash
# Make a Triton wheel small enough for ONE device run (issue #36, item 1).
#
# One run carries at most 64 MiB with the working tree; the Triton 3.7.1 wheel for CPython 3.12 is
# 198 MB (689 MB unpacked), so the last session sent it in four parts over four runs. Most of it is
# not needed to compile and launch kernels: libtriton.so carries 260 MB of debug info, CUPTI (128 MB)
# and libproton serve only the profiler, ptxas-blackwell only sm_100+, and the instrumentation and
# plugin test libraries nothing at all. Stripped and xz-compressed the rest is ~50 MB.
#
#   usage: bash benchmarks/gpu/slim_triton.sh WHEEL OUT.tar.xz
#   on the device: mkdir -p /root/triton && tar -xJf OUT.tar.xz -C /root/triton
#                  export PYTHONPATH=/root/triton:$PYTHONPATH   (ahead of the image's Triton)
# Checked here before sending: the unpacked tree imports under CPython 3.12 and compiles a kernel to a
# cubin for sm_90 (ptxas included) — see benchmarks/gpu/evidence_session.sh, which prints the version.
set -euo pipefail
WHEEL=$(realpath "$1")
OUT=$(realpath -m "$2")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"
python3 -m zipfile -e "$WHEEL" .
chmod +x triton/backends/*/bin/*  # zipfile drops the executable bits
rm -rf triton/backends/nvidia/lib/cupti triton/backends/nvidia/bin/ptxas-blackwell triton/_C/libproton.so \
       triton/instrumentation triton/plugins
strip --strip-unneeded triton/_C/libtriton.so triton/backends/nvidia/bin/* 2>/dev/null || true
du -sh . >&2
tar -cf - triton triton-*.dist-info | xz -9 -T0 > "$OUT"
ls -la "$OUT" >&2
