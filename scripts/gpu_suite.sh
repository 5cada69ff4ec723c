#!/usr/bin/env bash
# The GPU suite: everything the device machine runs, in one call.
#
#   bash scripts/gpu_suite.sh [section ...]      (default: configure build test bench)
#
# Sections (run in the order given):
#   configure  cmake -G Ninja, CUDA on, sm_90a (SEAM_CUDA_ARCHS), the carried PCRE2 from .carry/
#   build      builds $SEAM_GPU_TARGETS (default: the CUDA tests and the kernel bench)
#   test       runs every tests/cuda/*_test binary            -> $OUT/gpu_tests.log
#   bench      runs seam_kernel_bench                          -> $OUT/kernel_bench.md
#   info       nvidia-smi and toolchain versions               -> $OUT/device_info.txt
# Add a section by writing a section_<name> function below; keep $OUT to at most 8 files.
#
# The device machine lacks the PCRE2 headers (it has Boost, which the HTTP layer uses):
# they travel in the git-ignored folder .carry/ (name it in the device call's `carry`):
#   .carry/include/pcre2.h, .carry/lib/libpcre2-8.so,
#   .carry/pkgconfig/libpcre2-8.pc (prefix relative to the .pc file). A .carry/shared/ (copy of the shared
#   folder's small models, golden outputs, tokenizers) becomes SEAM_SHARED_DIR: ../shared
#   does not travel.
# The build dir (build-gpu/) persists only while the device machine stays warm.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${SEAM_GPU_BUILD:-$ROOT/build-gpu}"
OUT="${OUT:-$ROOT/gpu-out}"
CARRY="$ROOT/.carry"
JOBS="${SEAM_GPU_JOBS:-16}"
mkdir -p "$OUT"

export PKG_CONFIG_PATH="$CARRY/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export LD_LIBRARY_PATH="$CARRY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="/usr/local/cuda/bin:$PATH"

CUDA_TESTS=()
for f in "$ROOT"/tests/cuda/*_test.cpp; do CUDA_TESTS+=("$(basename "$f" .cpp)"); done
SEAM_GPU_TARGETS="${SEAM_GPU_TARGETS:-seam_kernel_bench ${CUDA_TESTS[*]}}"

FAILED=()
note() { printf '\n=== %s ===\n' "$*"; }

section_info() {
  note "info"
  {
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv 2>&1
    nvcc --version 2>&1 | tail -2
    cmake --version 2>&1 | head -1
    g++ --version 2>&1 | head -1
  } | tee "$OUT/device_info.txt"
}

section_configure() {
  note "configure ($BUILD)"
  local shared=()
  [ -d "$CARRY/shared" ] && shared=(-DSEAM_SHARED_DIR="$CARRY/shared")
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSEAM_CUDA=ON "${shared[@]}" \
    -DCMAKE_CUDA_ARCHITECTURES="${SEAM_CUDA_ARCHS:-90a-real}" 2>&1 | tee "$OUT/configure.log" | tail -5
  [ "${PIPESTATUS[0]}" -eq 0 ] || { FAILED+=(configure); return 1; }
}

section_build() {
  note "build: $SEAM_GPU_TARGETS"
  # shellcheck disable=SC2086
  cmake --build "$BUILD" -j"$JOBS" --target $SEAM_GPU_TARGETS > "$OUT/build.log" 2>&1
  local rc=$?
  grep -E "error:|warning: |FAILED" "$OUT/build.log" | head -40
  tail -2 "$OUT/build.log"
  [ $rc -eq 0 ] || { FAILED+=(build); return 1; }
}

section_test() {
  note "GPU tests"
  local log="$OUT/gpu_tests.log"
  : > "$log"
  for t in "${CUDA_TESTS[@]}"; do
    if [ ! -x "$BUILD/$t" ]; then
      echo "MISSING $t" | tee -a "$log"
      FAILED+=("$t")
      continue
    fi
    "$BUILD/$t" --gtest_color=no >> "$log" 2>&1
    local rc=$?
    local line
    line=$(grep -E "^\[  (PASSED|FAILED)  \]|tests? ran" "$log" | tail -1)
    printf '%-24s rc=%d  %s\n' "$t" "$rc" "$line"
    [ $rc -eq 0 ] || FAILED+=("$t")
  done
  grep -E "^\[  FAILED  \]|Failure|error:" "$log" | head -30
}

section_bench() {
  note "kernel bench"
  if [ ! -x "$BUILD/seam_kernel_bench" ]; then
    FAILED+=(bench)
    return 1
  fi
  "$BUILD/seam_kernel_bench" ${SEAM_BENCH_ARGS:-} 2>&1 | tee "$OUT/kernel_bench.md"
  [ "${PIPESTATUS[0]}" -eq 0 ] || FAILED+=(bench)
}

sections=("$@")
[ ${#sections[@]} -eq 0 ] && sections=(info configure build test bench)
for s in "${sections[@]}"; do
  if ! declare -F "section_$s" > /dev/null; then
    echo "gpu_suite: unknown section '$s'"
    exit 2
  fi
  start=$(date +%s)
  "section_$s"
  echo "[$s: $(($(date +%s) - start)) s]"
  # Later sections need the build: stop early when configure/build failed.
  if [[ " ${FAILED[*]} " == *" configure "* || " ${FAILED[*]} " == *" build "* ]]; then break; fi
done

note "summary"
if [ ${#FAILED[@]} -eq 0 ]; then
  echo "gpu_suite: all sections passed (${sections[*]})" | tee "$OUT/summary.txt"
else
  echo "gpu_suite: FAILED: ${FAILED[*]}" | tee "$OUT/summary.txt"
  exit 1
fi
