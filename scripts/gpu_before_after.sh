#!/usr/bin/env bash
# Before/after on the GPU: two snapshots of the tree built side by side and the issue's figures
# measured interleaved (before, after, before, after, ...) in one device call, so that clock and
# power drift falls on both sides alike.
#
#   here:    git archive BASE -o .gl/base.tar && bash scripts/device_tree.sh pack   (HEAD -> .gl/tree.tar)
#            bash scripts/make_carry.sh                                              (.carry/)
#   device:  bash scripts/gpu_before_after.sh [section ...]   (carry [".carry", ".gl"])
#
# Sections (default: build models bench serving):
#   build    extracts .gl/base.tar and .gl/tree.tar into /tmp/seam_base and /tmp/seam_head and
#            builds `seam` in both (and the CUDA tests in head), concurrently
#   tests    runs every tests/cuda binary of head                    -> $OUT/gpu_tests.log
#   models   makes the random-weight Llama-3.1-8B shape (tools/make_random_models.py)
#   bench    bench-one-batch: decode batch 1 and 64, prefill 4,096, mixed 512 + 64; ROUNDS rounds
#   serving  seam serve + seam bench-serving, 1,024 in / 256 out, 64 clients, before then after
#   structured  the head alone: the same load with every request under a nested JSON schema
#            ($SCHEMA, default bench/schemas/nested.json) and without, interleaved, ROUNDS rounds
# Results: $OUT/summary.txt (one line a run), $OUT/bench.jsonl (the raw JSON lines).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/serve_wait.sh"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT=${OUT:-/tmp/seam_out}
MODELS=${MODELS:-/tmp/seam_models}
ROUNDS=${ROUNDS:-2}
mkdir -p "$OUT"
sections=("$@")
[ ${#sections[@]} -eq 0 ] && sections=(build models bench serving)
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }
export PATH="/usr/local/cuda/bin:$PATH"
export LD_LIBRARY_PATH="$ROOT/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

build_tree() {  # name, extra targets...
  local name=$1; shift
  local tree=/tmp/seam_$name
  rm -rf "$tree" && mkdir -p "$tree" && tar -xf "$ROOT/.gl/$( [ "$name" = base ] && echo base || echo tree ).tar" -C "$tree"
  ln -sfn "$ROOT/.carry" "$tree/.carry"
  SEAM_GPU_BUILD="$tree/build-gpu" SEAM_GPU_JOBS=8 SEAM_GPU_TARGETS="seam $*" OUT="$OUT/build_$name" \
    bash "$tree/scripts/gpu_suite.sh" configure build > "$OUT/build_$name.log" 2>&1
}

for s in "${sections[@]}"; do
  case $s in
    build)
      log "build base=$(cat "$ROOT/.gl/BASE_ID" 2>/dev/null) head=$(cat "$ROOT/.gl/TREE_ID" 2>/dev/null) $(date -u +%FT%TZ)"
      head_tests=$(cd "$ROOT/tests/cuda" && ls ./*_test.cpp | sed 's|./||; s/.cpp//' | tr '\n' ' ')
      head_tests="$head_tests ${EXTRA_TARGETS:-}"
      build_tree base & pb=$!
      build_tree head $head_tests & ph=$!
      wait $pb; rb=$?; wait $ph; rh=$?
      log "build base rc=$rb head rc=$rh $(date -u +%T)"
      [ $rb -eq 0 ] && [ $rh -eq 0 ] || { tail -20 "$OUT"/build_*.log; exit 1; }
      ;;
    tests)
      log "head CUDA tests"
      : > "$OUT/gpu_tests.log"
      for t in /tmp/seam_head/tests/cuda/*_test.cpp; do
        b=/tmp/seam_head/build-gpu/$(basename "$t" .cpp)
        SEAM_HF_MODELS="$MODELS" "$b" >> "$OUT/gpu_tests.log" 2>&1
        echo "$(basename "$b") rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/gpu_tests.log" | tail -1)" | tee -a "$OUT/summary.txt"
      done
      ;;
    models)
      [ -d "$MODELS/llama-3.1-8b" ] || python3 "$ROOT/tools/make_random_models.py" "$MODELS" --only llama-3.1-8b --no-reference 2>&1 | grep -v Warning | tail -3
      log "models ready $(date -u +%T)"
      ;;
    bench)
      bench_args=("--batch-size 1 --input-len 128 --output-len 64" "--batch-size 64 --input-len 128 --output-len 128")
      # BENCH_SET=decode: only the two decode shapes (when device time is short)
      [ "${BENCH_SET:-all}" = decode ] || bench_args+=("--mode extend --batch-size 1 --input-len 4096 --reps 5" \
                                                     "--mode mixed --batch-size 64 --input-len 512 --reps 10")
      for args in "${bench_args[@]}"; do
        for r in $(seq 1 "$ROUNDS"); do
          for side in base head; do
            # shellcheck disable=SC2086
            line=$(/tmp/seam_$side/build-gpu/seam bench-one-batch --device cuda --dtype bfloat16 \
              --model-path "$MODELS/llama-3.1-8b" $args 2>>"$OUT/bench_stderr.log" | tail -1)
            echo "$side | $args | $line" >> "$OUT/bench.jsonl"
            echo "$side r$r | $args | $(echo "$line" | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(" ".join(f"{k}={v:.6g}" for k,v in d.items() if isinstance(v,(int,float)) and k.endswith(("latency_s","tok_s","_replays","eager_steps","captures_after_seal"))))' 2>/dev/null)" | tee -a "$OUT/summary.txt"
          done
        done
      done
      ;;
    serving)
      for side in base head; do
        /tmp/seam_$side/build-gpu/seam serve --model-path "$MODELS/llama-3.1-8b" --device cuda --dtype bfloat16 \
          --port 30123 --max-running-requests 256 --context-length 4096 > "$OUT/serve_$side.log" 2>&1 &
        pid=$!
        wait_healthy 30123 $pid
        log "serving $side, 64 clients $(date -u +%T)"
        /tmp/seam_$side/build-gpu/seam bench-serving --port 30123 --num-prompts 192 --random-input-len 1024 \
          --random-output-len 256 --random-range-ratio 1 --max-concurrency 64 2>&1 | tee -a "$OUT/serving.log" | tail -4 | tee -a "$OUT/summary.txt"
        kill $pid; wait $pid 2>/dev/null
      done
      ;;
    structured)
      # Issue 21: the head, every request with a nested JSON schema against the same load without,
      # interleaved (radix cache off: the seeds repeat, so cached prefixes would flatter later runs).
      SCHEMA=${SCHEMA:-$ROOT/bench/schemas/nested.json}
      /tmp/seam_head/build-gpu/seam serve --model-path "$MODELS/llama-3.1-8b" --device cuda --dtype bfloat16 \
        --port 30123 --max-running-requests 256 --context-length 4096 --disable-radix-cache > "$OUT/serve_structured.log" 2>&1 &
      pid=$!
      wait_healthy 30123 $pid
      for r in $(seq 1 "$ROUNDS"); do
        for mode in plain schema; do
          log "structured r$r $mode, 64 clients $(date -u +%T)"
          extra=""; [ $mode = schema ] && extra="${SCHEMA_FLAG:---json-schema} $SCHEMA"
          # shellcheck disable=SC2086
          /tmp/seam_head/build-gpu/seam bench-serving --port 30123 --num-prompts 192 --random-input-len 1024 \
            --random-output-len 256 --random-range-ratio 1 --max-concurrency 64 $extra 2>&1 | tee -a "$OUT/serving_structured.log" | tail -4 | tee -a "$OUT/summary.txt"
          curl -s localhost:30123/metrics | grep -E "^seam_grammar" | tee -a "$OUT/summary.txt"
        done
      done
      kill $pid; wait $pid 2>/dev/null
      ;;
    *) echo "unknown section $s"; exit 2 ;;
  esac
done
