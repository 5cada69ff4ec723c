#!/usr/bin/env bash
# Serving A/B on the GPU: one server per arm, the arms alternated ROUNDS times (a, b, a, b, ...) on
# one machine and one binary, each serving one bench-serving run of IN_LEN in / OUT_LEN out at 64
# clients; after each run the output throughput, median TTFT / TPOT / ITL, and /metrics' GPU busy
# fraction, step wall time and host phases a step. Random weights (--load-format dummy) of a
# config-only folder (tools/make_random_models.py).
#   device: BUILD=<build dir> bash scripts/gpu_serving_ab.sh
#   ARMS: ';'-separated arms, each "label|environment assignments|more serve flags" (either part
#     may be empty). Default: the output overlap off and on,
#     "off||--disable-output-overlap;on||--enable-output-overlap" (scripts/gpu_overlap_ab.sh);
#     e.g. "skip0|SEAM_FP8_ACT_SKIP=0|;skip1|SEAM_FP8_ACT_SKIP=1|" (the thirty-first pass).
#   MODEL (default llama-3.1-8b), QUANT_ARGS (default "--quantization fp8"; "" for bf16),
#   ROUNDS (default 2), PROMPTS (default 256), SERVE_ARGS (more `seam serve` flags for every arm),
#   DEVICE (default cuda), DTYPE (default bfloat16), IN_LEN / OUT_LEN (default 1,024 / 256), CONTEXT (default 4,096).
# Results: $OUT/summary.txt (one block a server), $OUT/serving.log, serve logs beside them.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/serve_wait.sh"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT=${OUT:-/tmp/seam_out}
MODELS=${MODELS:-/tmp/seam_models_config}
BUILD=${BUILD:-$ROOT/build-gpu}
MODEL=${MODEL:-llama-3.1-8b}
QUANT_ARGS=${QUANT_ARGS---quantization fp8}
ROUNDS=${ROUNDS:-2}
PROMPTS=${PROMPTS:-256}
PORT=${PORT:-30123}
DEVICE=${DEVICE:-cuda}
DTYPE=${DTYPE:-bfloat16}
IN_LEN=${IN_LEN:-1024}
OUT_LEN=${OUT_LEN:-256}
CONTEXT=${CONTEXT:-4096}
ARMS=${ARMS:-"off||--disable-output-overlap;on||--enable-output-overlap"}
mkdir -p "$OUT" "$MODELS"
export LD_LIBRARY_PATH="$ROOT/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }
[ -x "$BUILD/seam" ] || { log "no $BUILD/seam: set BUILD to a built folder"; exit 1; }
if [ ! -f "$MODELS/$MODEL/config.json" ]; then
  timeout 120 python3 "$ROOT/tools/make_random_models.py" "$MODELS" --only "$MODEL" --config-only 2>&1 \
    | grep -v -i warn | tail -1 | tee -a "$OUT/summary.txt"
fi

arm() {  # label, environment assignments (one word, space-separated), extra serve flags...
  local label=$1 envs=$2
  shift 2
  # shellcheck disable=SC2086
  env $envs "$BUILD/seam" serve --model-path "$MODELS/$MODEL" --device "$DEVICE" --dtype "$DTYPE" $QUANT_ARGS --load-format dummy \
    --port "$PORT" --max-running-requests 256 --context-length "$CONTEXT" --disable-radix-cache ${SERVE_ARGS:-} "$@" \
    > "$OUT/serve_$label.log" 2>&1 &
  local pid=$! up=0
  wait_healthy "$PORT" $pid 120 && up=1
  if [ $up = 1 ]; then
    log "$label: $MODEL $QUANT_ARGS ${envs:+[$envs] }$*, 64 clients, $PROMPTS prompts $(date -u +%T)"
    timeout 150 "$BUILD/seam" bench-serving --port "$PORT" --num-prompts "$PROMPTS" --random-input-len "$IN_LEN" \
      --random-output-len "$OUT_LEN" --random-range-ratio 1 --max-concurrency 64 2>&1 | tee -a "$OUT/serving.log" \
      | grep -E "^(Successful requests|Output token throughput|Median TPOT|Median ITL|Median TTFT)" \
      | tr -s ' ' | paste -sd ';' | tee -a "$OUT/summary.txt"
    curl -s "localhost:$PORT/metrics" \
      | grep -E "^seam_(gpu_busy_fraction|step_wall_ms_per_step|gpu_ms_per_step|host_ms_per_step|eager_steps|captures_after_seal)" \
      | tr '\n' ' ' | tee -a "$OUT/summary.txt"
    echo | tee -a "$OUT/summary.txt"
  else
    log "$label: serve did not come up (exited, or not healthy in 120 s)"
    tail -5 "$OUT/serve_$label.log" | tee -a "$OUT/summary.txt"
  fi
  kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
}

IFS=';' read -r -a arm_specs <<< "$ARMS"
for r in $(seq 1 "$ROUNDS"); do
  for spec in "${arm_specs[@]}"; do
    IFS='|' read -r label envs flags <<< "$spec"
    # shellcheck disable=SC2086
    arm "$label$r" "$envs" $flags
  done
done
log "done $(date -u +%T)"
