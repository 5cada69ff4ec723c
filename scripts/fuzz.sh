#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ (clang, ASan + UBSan, CUDA off, in
# build-fuzz/) and runs each for N seconds (default 60) on its seed corpus
# fuzz/corpus/<target>/. New inputs go to build-fuzz/corpus/<target>/ (not the
# repository); a crash is saved as build-fuzz/artifacts/<target>-crash-* and
# fails the run. Prints executions per target.
#   scripts/fuzz.sh 10            # the CI smoke: 10 s each
#   scripts/fuzz.sh 600 http      # only targets whose name contains "http"
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
filter=${2:-}
build=${SEAM_FUZZ_BUILD:-build-fuzz}
jobs=${JOBS:-2}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S fuzz -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_COMPILER="${CXX_FUZZ:-clang++}" \
  "${launcher[@]}" >/dev/null
ninja -C "$build" -j"$jobs" >/dev/null
mkdir -p "$build/artifacts"
targets=(request_json_fuzz safetensors_header_fuzz config_json_fuzz tokenizer_json_fuzz http_request_fuzz json_schema_fuzz
         grammar_text_fuzz)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=0
printf '%-26s %12s %10s %s\n' target executions exec/s result
for t in "${targets[@]}"; do
  [[ -n "$filter" && "$t" != *"$filter"* ]] && continue
  mkdir -p "$build/corpus/$t"
  dict=()
  [[ "$t" != http_request_fuzz ]] && dict=(-dict=fuzz/json.dict)
  log="$build/$t.log"
  rc=0
  # -rss_limit_mb: a parser that balloons on small input is a finding too.
  "$build/$t" -max_total_time="$seconds" -print_final_stats=1 -max_len=65536 -rss_limit_mb=2048 -timeout=10 \
    "${dict[@]}" -artifact_prefix="$build/artifacts/$t-" "$build/corpus/$t" "fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
  execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log" | tail -1)
  rate=$(awk '/stat::average_exec_per_sec/ {print $2}' "$log" | tail -1)
  result=ok
  if [[ $rc -ne 0 ]]; then
    result="FAILED (exit $rc; see $log)"
    failed=1
  fi
  printf '%-26s %12s %10s %s\n' "$t" "${execs:-?}" "${rate:-?}" "$result"
done
exit $failed
