#!/usr/bin/env bash
# Model-level GPU work in one device call: build (if needed), stories260K golden
# on the GPU, random-weight models of real shapes with transformers references,
# parity tests, bench-one-batch and serving benchmarks. Logs go to $OUT.
# Usage: bash scripts/gpu_models.sh [sections...]   (default: all but ab)
#   sections: build golden models parity bench mixed serving ab
#   ab: A/B of diagnostic switches on one bench-one-batch command, interleaved so that drift
#       between runs falls on both sides: AB_MODEL (default llama-3.1-8b), AB_ARGS (the bench
#       arguments), AB_SETTINGS (space-separated VAR=value settings, one per side, e.g.
#       "SEAM_PREFILL_WGMMA=0 SEAM_PREFILL_WGMMA=1"), AB_ROUNDS (default 2).
# Note: on the device machine the copy's .git may be older than the working tree it carries,
# so `git rev-parse` there can name an earlier commit; record the commit on this side, or build
# from a snapshot (scripts/device_tree.sh).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/serve_wait.sh"
OUT=${OUT:-/tmp/seam_out}
mkdir -p "$OUT"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD=${BUILD:-build-gpu}
case $BUILD in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac  # relative to the repository root
MODELS=${MODELS:-/tmp/seam_models}
sections=("$@")
[ ${#sections[@]} -eq 0 ] && sections=(build golden models parity bench serving)  # not ab: it needs AB_SETTINGS
has() { local s; for s in "${sections[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }

if has build; then
  log "build $(git rev-parse --short HEAD 2>/dev/null) $(date -u +%FT%TZ)"
  SEAM_GPU_BUILD="$BUILD" SEAM_GPU_TARGETS="seam seam_kernel_bench $(cd tests/cuda && ls *_test.cpp | sed 's/.cpp//' | tr '\n' ' ')" \
    bash scripts/gpu_suite.sh configure build > "$OUT/build_steps.log" 2>&1 || { tail -30 "$OUT/build_steps.log"; exit 1; }
  tail -3 "$OUT/build_steps.log"
fi
export LD_LIBRARY_PATH="$ROOT/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if has golden; then
  log "stories260K float32 golden on the GPU"
  "$BUILD/cuda_golden_test" 2>&1 | tail -5 | tee -a "$OUT/summary.txt"
fi
if has models; then
  log "random-weight models"
  python3 tools/make_random_models.py "$MODELS" ${MODEL_SHAPES:+--only $MODEL_SHAPES} ${MODEL_ARGS:-} 2>&1 | grep -v Warning | tail -8 | tee -a "$OUT/summary.txt"
fi
if has parity; then
  log "transformers parity"
  SEAM_HF_MODELS="$MODELS" "$BUILD/hf_parity_test" 2>&1 | grep -E "rel err|greedy|OK|FAILED|Failure" | tee -a "$OUT/summary.txt"
fi
bench_one() {  # model, args...
  local m=$1; shift
  echo "## $m $*" >> "$OUT/bench.log"
  local line
  line=$("$BUILD/seam" bench-one-batch --device cuda --dtype bfloat16 --model-path "$MODELS/$m" "$@" 2>>"$OUT/bench.log" | tee -a "$OUT/bench.log" | tail -1)
  echo "$m | $* | $line" >> "$OUT/bench.jsonl"
  echo "$m | $* | $(echo "$line" | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print({k: (round(v,6) if isinstance(v,float) else v) for k,v in d.items() if k.endswith(("latency_s","tok_s","path","capture_s","bytes"))})' 2>/dev/null)" | tee -a "$OUT/summary.txt"
}
if has bench; then
  log "bench-one-batch"
  if [ -d "$MODELS/llama-3.1-8b" ]; then
    bench_one llama-3.1-8b --batch-size 1 --input-len 128 --output-len 64
    bench_one llama-3.1-8b --mode extend --batch-size 1 --input-len 4096 --reps 5
    bench_one llama-3.1-8b --mode extend --batch-size 1 --input-len 4096 --reps 5 --disable-piecewise-cuda-graph
    bench_one llama-3.1-8b --batch-size 64 --input-len 128 --output-len 128
    bench_one llama-3.1-8b --mode mixed --batch-size 64 --input-len 512
  fi
  for m in llama-3.2-1b qwen2.5-0.5b; do
    [ -d "$MODELS/$m" ] || continue
    bench_one $m --batch-size 1 --input-len 128 --output-len 64
    for n in 16 64 128 512 2048; do
      bench_one $m --mode extend --batch-size 1 --input-len $n --piecewise-cuda-graph-tokens $n
      bench_one $m --mode extend --batch-size 1 --input-len $n --disable-piecewise-cuda-graph
    done
    bench_one $m --mode decode --batch-size 1 --input-len 128 --disable-cuda-graph
  done
fi
if has mixed; then
  log "bench-one-batch mixed"
  bench_one llama-3.1-8b --mode mixed --batch-size 64 --input-len 512 --reps 10
  bench_one llama-3.1-8b --mode mixed --batch-size 64 --input-len 512 --reps 10 --disable-piecewise-cuda-graph
fi
if has ab; then
  log "A/B: ${AB_SETTINGS:-} on ${AB_MODEL:-llama-3.1-8b} ${AB_ARGS:-}"
  for round in $(seq 1 "${AB_ROUNDS:-2}"); do
    for setting in ${AB_SETTINGS:-}; do
      # shellcheck disable=SC2086
      line=$(env "$setting" "$BUILD/seam" bench-one-batch --device cuda --dtype bfloat16 \
        --model-path "$MODELS/${AB_MODEL:-llama-3.1-8b}" ${AB_ARGS:-} 2>>"$OUT/bench.log" | tail -1)
      echo "$setting | ${AB_ARGS:-} | $line" >> "$OUT/bench.jsonl"
      echo "round $round $setting: $(echo "$line" | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(" ".join(f"{k}={v:.6g}" for k,v in d.items() if isinstance(v,float) and k.endswith(("latency_s","tok_s"))))' 2>/dev/null)" \
        | tee -a "$OUT/summary.txt"
    done
  done
fi
if has serving; then
  log "serving"
  for m in ${SERVING_MODELS:-llama-3.1-8b llama-3.2-1b}; do
    [ -d "$MODELS/$m" ] || continue
    for mixed in "" "--enable-mixed-chunk"; do
      "$BUILD/seam" serve --model-path "$MODELS/$m" --device cuda --dtype bfloat16 --port 30123 $mixed \
        --max-running-requests 256 --context-length 4096 > "$OUT/serve_$m.log" 2>&1 &
      pid=$!
      wait_healthy 30123 $pid
      for cc in ${CONCURRENCY:-1 16 64 128}; do
        n=$(( cc == 1 ? 8 : (cc == 16 ? 64 : (cc == 64 ? 192 : 256)) ))
        [ -n "$mixed" ] && [ "$cc" != 64 ] && continue
        echo "## $m mixed=${mixed:-off} concurrency $cc" | tee -a "$OUT/summary.txt"
        "$BUILD/seam" bench-serving --port 30123 --num-prompts $n --random-input-len 1024 --random-output-len 256 \
          --random-range-ratio 1 --max-concurrency $cc 2>&1 | tee -a "$OUT/serving.log" | tail -3 | tee -a "$OUT/summary.txt"
      done
      curl -s localhost:30123/metrics | grep -E "^seam_(host|steps|eager|captures|gpu|step_wall)" | tee -a "$OUT/summary.txt" | head -30
      kill $pid; wait $pid 2>/dev/null
    done
  done
fi
