#!/usr/bin/env bash
# Issue 24's GPU figures for the dense families, one shape at a time (the disk holds few of them):
# make the random-weight model with transformers' references, the parity test, batch-1 decode,
# and for the shapes named in SERVE_SHAPES serving 1,024 in / 256 out at 64 clients; then delete
# the model. Uses the head build of scripts/gpu_before_after.sh (/tmp/seam_head/build-gpu).
#   device: bash scripts/gpu_families.sh gemma-2-9b gemma-3-4b ...
# STEPS (default "make parity bench serve delete") picks the steps, so that the GPU-heavy model
# making can overlap a build and the timed steps run alone.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/serve_wait.sh"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT=${OUT:-/tmp/seam_out}
MODELS=${MODELS:-/tmp/seam_models}
BUILD=${BUILD:-/tmp/seam_head/build-gpu}
SERVE_SHAPES=${SERVE_SHAPES:-gemma-2-9b}
STEPS=" ${STEPS:-make parity bench serve delete} "
step() { [[ "$STEPS" == *" $1 "* ]]; }
mkdir -p "$OUT" "$MODELS"
export LD_LIBRARY_PATH="$ROOT/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }
bench() {  # shape, args...
  local m=$1; shift
  local line
  # shellcheck disable=SC2068
  line=$("$BUILD/seam" bench-one-batch --device cuda --dtype bfloat16 --model-path "$MODELS/$m" $@ 2>>"$OUT/bench_stderr.log" | tail -1)
  echo "$m | $* | $line" >> "$OUT/bench.jsonl"
  echo "$m | $* | $(echo "$line" | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(" ".join(f"{k}={v:.6g}" for k,v in d.items() if isinstance(v,(int,float)) and k.endswith(("latency_s","tok_s","_replays","eager_steps","captures_after_seal","weight_bytes"))))' 2>/dev/null)" | tee -a "$OUT/summary.txt"
}
for m in "$@"; do
  if step make && [ ! -d "$MODELS/$m" ]; then
    log "make $m $(date -u +%T)"
    python3 "$ROOT/tools/make_random_models.py" "$MODELS" --only "$m" 2>&1 | grep -v -i warn | tail -2 | tee -a "$OUT/summary.txt"
  fi
  if step parity; then
    log "parity $m $(date -u +%T)"
    filter=$(echo "$m" | tr -c 'a-zA-Z0-9\n' '_')
    SEAM_HF_MODELS="$MODELS" "$BUILD/hf_parity_test" --gtest_filter="*$filter*" 2>&1 \
      | grep -E "rel err|greedy|OK \]|FAILED|Failure|Expected|Which is|rror" | head -40 | tee -a "$OUT/summary.txt"
  fi
  if step bench; then
    log "bench $m $(date -u +%T)"
    bench "$m" --batch-size 1 --input-len 128 --output-len 64
    bench "$m" --batch-size 64 --input-len 128 --output-len 128
    [ "$m" = gemma-3-4b ] && bench "$m" --mode extend --batch-size 1 --input-len 16384 --reps 3
  fi
  if step serve && [[ " $SERVE_SHAPES " == *" $m "* ]]; then
    "$BUILD/seam" serve --model-path "$MODELS/$m" --device cuda --dtype bfloat16 --port 30123 \
      --max-running-requests 256 --context-length 4096 --disable-radix-cache > "$OUT/serve_$m.log" 2>&1 &
    pid=$!
    wait_healthy 30123 $pid
    log "serving $m, 64 clients $(date -u +%T)"
    "$BUILD/seam" bench-serving --port 30123 --num-prompts 192 --random-input-len 1024 --random-output-len 256 \
      --random-range-ratio 1 --max-concurrency 64 2>&1 | tee -a "$OUT/serving_$m.log" | tail -4 | tee -a "$OUT/summary.txt"
    curl -s localhost:30123/metrics | grep -E "^seam_(eager|captures)" | tee -a "$OUT/summary.txt"
    kill $pid; wait $pid 2>/dev/null
  fi
  step delete && rm -rf "${MODELS:?}/$m"
done
