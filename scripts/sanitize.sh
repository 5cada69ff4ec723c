#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer build of the CPU test suite
# (CUDA off, its own build dir), run with ctest. Any report fails the run:
# UBSan halts on the first finding, ASan on any memory error or leak.
#   scripts/sanitize.sh            # configure, build every test, run them
#   JOBS=2 CXX=clang++ scripts/sanitize.sh -R server   # ctest arguments pass through
set -euo pipefail
cd "$(dirname "$0")/.."
build=${SEAM_SANITIZE_BUILD:-build-sanitize}
jobs=${JOBS:-2}
cxx=${CXX:-g++}
shared=${SEAM_SHARED_DIR:-$(cd .. && pwd)/shared}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
flags="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined"
t0=$(date +%s)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=None -DSEAM_CUDA=OFF -DCMAKE_CXX_COMPILER="$cxx" \
  "${launcher[@]}" -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DSEAM_SHARED_DIR="$shared" >/dev/null
ninja -C "$build" -j"$jobs"
t1=$(date +%s)
# detect_leaks: leaks fail the test binaries (and the seam server children,
# whose exit status the server tests check). The suppressions file names
# leaks of libraries seam cannot fix, with the reason for each.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:strict_string_checks=1:check_initialization_order=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$(pwd)/scripts/lsan.supp}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
ctest --test-dir "$build" --output-on-failure -j"$jobs" "$@" || status=$?
t2=$(date +%s)
echo "sanitize: build $((t1 - t0)) s, tests $((t2 - t1)) s, exit $status"
exit $status
