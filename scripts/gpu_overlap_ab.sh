#!/usr/bin/env bash
# Serving A/B of the output overlap on the H200: servers with --disable-output-overlap and with the
# overlap (the default; --enable-output-overlap), alternated
# (ROUNDS times: off, on, off, on, ...) on one machine and one binary, each serving one
# bench-serving run of 1,024 in / 256 out at 64 clients; after each run the output throughput,
# median TPOT / ITL, and /metrics' GPU busy fraction, step wall time and host phases a step.
# Random weights (--load-format dummy) of a config-only folder (tools/make_random_models.py).
#   device: BUILD=<build dir> bash scripts/gpu_overlap_ab.sh
#   MODEL (default llama-3.1-8b), QUANT_ARGS (default "--quantization fp8"; "" for bf16),
#   ROUNDS (default 2), PROMPTS (default 256), SERVE_ARGS (more `seam serve` flags for both arms).
# Results: $OUT/summary.txt (one block a server), $OUT/overlap_serving.log, serve logs beside them.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT=${OUT:-/tmp/seam_out}
MODELS=${MODELS:-/tmp/seam_models_config}
BUILD=${BUILD:-$ROOT/build-gpu}
MODEL=${MODEL:-llama-3.1-8b}
QUANT_ARGS=${QUANT_ARGS---quantization fp8}
ROUNDS=${ROUNDS:-2}
PROMPTS=${PROMPTS:-256}
PORT=${PORT:-30123}
mkdir -p "$OUT" "$MODELS"
export LD_LIBRARY_PATH="$ROOT/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }
[ -x "$BUILD/seam" ] || { log "no $BUILD/seam: set BUILD to a built folder"; exit 1; }
if [ ! -f "$MODELS/$MODEL/config.json" ]; then
  timeout 120 python3 "$ROOT/tools/make_random_models.py" "$MODELS" --only "$MODEL" --config-only 2>&1 \
    | grep -v -i warn | tail -1 | tee -a "$OUT/summary.txt"
fi

arm() {  # label, extra serve flags...
  local label=$1
  shift
  # shellcheck disable=SC2086
  "$BUILD/seam" serve --model-path "$MODELS/$MODEL" --device cuda --dtype bfloat16 $QUANT_ARGS --load-format dummy \
    --port "$PORT" --max-running-requests 256 --context-length 4096 --disable-radix-cache ${SERVE_ARGS:-} "$@" \
    > "$OUT/serve_$label.log" 2>&1 &
  local pid=$! up=0
  for _ in $(seq 1 240); do curl -sf "localhost:$PORT/health" > /dev/null 2>&1 && { up=1; break; }; sleep 0.5; done
  if [ $up = 1 ]; then
    log "$label: $MODEL $QUANT_ARGS $*, 64 clients, $PROMPTS prompts $(date -u +%T)"
    timeout 150 "$BUILD/seam" bench-serving --port "$PORT" --num-prompts "$PROMPTS" --random-input-len 1024 \
      --random-output-len 256 --random-range-ratio 1 --max-concurrency 64 2>&1 | tee -a "$OUT/overlap_serving.log" \
      | grep -E "^(Successful requests|Output token throughput|Median TPOT|Median ITL|Median TTFT)" \
      | tr -s ' ' | paste -sd ';' | tee -a "$OUT/summary.txt"
    curl -s "localhost:$PORT/metrics" \
      | grep -E "^seam_(gpu_busy_fraction|step_wall_ms_per_step|gpu_ms_per_step|host_ms_per_step|eager_steps|captures_after_seal)" \
      | tr '\n' ' ' | tee -a "$OUT/summary.txt"
    echo | tee -a "$OUT/summary.txt"
  else
    log "$label: serve did not come up in 120 s"
    tail -5 "$OUT/serve_$label.log" | tee -a "$OUT/summary.txt"
  fi
  kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
}

for r in $(seq 1 "$ROUNDS"); do
  arm "off$r" --disable-output-overlap
  arm "on$r" --enable-output-overlap  # the default since the twenty-eighth pass
done
log "done $(date -u +%T)"
