#!/usr/bin/env bash
# Model-level GPU work in one device call: build (if needed), stories260K golden
# on the GPU, random-weight models of real shapes with transformers references,
# parity tests, bench-one-batch and serving benchmarks. Logs go to $OUT.
# Usage: bash scripts/gpu_models.sh [sections...]   (default: all)
#   sections: build golden models parity bench serving
set -uo pipefail
OUT=${OUT:-/tmp/seam_out}
mkdir -p "$OUT"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD=${BUILD:-build-gpu}
MODELS=${MODELS:-/tmp/seam_models}
sections=("$@")
[ ${#sections[@]} -eq 0 ] && sections=(build golden models parity bench serving)
has() { local s; for s in "${sections[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }

if has build; then
  log "build $(git rev-parse --short HEAD 2>/dev/null) $(date -u +%FT%TZ)"
  if [ -f scripts/gpu_env.sh ]; then source scripts/gpu_env.sh; fi
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSEAM_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DSEAM_SHARED_DIR="$ROOT/.carry/shared" ${SEAM_CMAKE_ARGS:-} > "$OUT/build.log" 2>&1 &&
  cmake --build "$BUILD" -j16 >> "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
fi
if has golden; then
  log "stories260K float32 golden on the GPU"
  "$BUILD/cuda_golden_test" 2>&1 | tail -5 | tee -a "$OUT/summary.txt"
fi
if has models; then
  log "random-weight models"
  python3 tools/make_random_models.py "$MODELS" --tokenizer .carry/shared/tokenizers/llama3-style/tokenizer.json \
    ${MODEL_SHAPES:+--only $MODEL_SHAPES} 2>&1 | grep -v Warning | tail -8 | tee -a "$OUT/summary.txt"
fi
if has parity; then
  log "transformers parity"
  SEAM_HF_MODELS="$MODELS" "$BUILD/hf_parity_test" 2>&1 | grep -E "rel err|greedy|OK|FAILED|Failure" | tee -a "$OUT/summary.txt"
fi
if has bench; then
  log "bench-one-batch"
  B="$BUILD/seam bench-one-batch --device cuda --dtype bfloat16"
  for m in llama-3.1-8b llama-3.2-1b qwen2.5-0.5b; do
    [ -d "$MODELS/$m" ] || continue
    for args in "--batch-size 1 --input-len 128 --output-len 64" "--batch-size 1 --input-len 4096 --output-len 8" \
                "--batch-size 64 --input-len 128 --output-len 128" \
                "--mode extend --batch-size 1 --input-len 16" "--mode extend --batch-size 1 --input-len 16 --disable-piecewise-cuda-graph" \
                "--mode extend --batch-size 1 --input-len 64" "--mode extend --batch-size 1 --input-len 64 --disable-piecewise-cuda-graph" \
                "--mode extend --batch-size 1 --input-len 128" "--mode extend --batch-size 1 --input-len 128 --disable-piecewise-cuda-graph" \
                "--mode extend --batch-size 1 --input-len 512" "--mode extend --batch-size 1 --input-len 512 --disable-piecewise-cuda-graph" \
                "--mode decode --batch-size 1 --input-len 512 --disable-cuda-graph" \
                "--mode mixed --batch-size 64 --input-len 512"; do
      echo "## $m $args" >> "$OUT/bench.log"
      line=$($B --model-path "$MODELS/$m" $args 2>>"$OUT/bench.log" | tee -a "$OUT/bench.log" | tail -1)
      echo "$m | $args | $line" >> "$OUT/bench.jsonl"
      echo "$m | $args | $(echo "$line" | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print({k: (round(v,6) if isinstance(v,float) else v) for k,v in d.items() if k.endswith(("latency_s","tok_s","path","capture_s","bytes"))})' 2>/dev/null)" | tee -a "$OUT/summary.txt"
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
      for i in $(seq 1 240); do curl -sf localhost:30123/health > /dev/null 2>&1 && break; sleep 0.5; done
      for cc in ${CONCURRENCY:-1 16 64 128}; do
        n=$(( cc == 1 ? 8 : (cc == 16 ? 64 : (cc == 64 ? 192 : 256)) ))
        [ -n "$mixed" ] && [ "$cc" != 64 ] && continue
        echo "## $m mixed=${mixed:-off} concurrency $cc" | tee -a "$OUT/summary.txt"
        "$BUILD/seam" bench-serving --port 30123 --num-prompts $n --random-input-len 1024 --random-output-len 256 \
          --random-range-ratio 1 --max-concurrency $cc 2>&1 | tee -a "$OUT/serving.log" | tail -3 | tee -a "$OUT/summary.txt"
      done
      curl -s localhost:30123/metrics | grep -E "^seam_(host|steps|eager|captures)" | tee -a "$OUT/summary.txt" | head -20
      kill $pid; wait $pid 2>/dev/null
    done
  done
fi
