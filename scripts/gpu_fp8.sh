#!/usr/bin/env bash
# Issue 22's FP8 linear figures on the H200 (random-weight Llama-3.1-8B, --quantization fp8:
# per-channel E4M3 weights quantized on the device at load, dynamic per-token activations),
# each with its floor: decode batch 1 (128 in, 64 out) and 64, prefill 4,096 (--mode extend);
# serving 1,024 in / 256 out at 64 clients (output tok/s) and at 1 client (TPOT); then the bf16
# rows of the same benchmarks. The model is a config-only folder (tools/make_random_models.py
# --config-only: config.json + tokenizer.json, no 16 GB of weights) run with --load-format dummy
# (random weights made on the device). Builds nothing: BUILD must hold a built `seam`. Every step
# has a timeout and the whole stays under ~4 minutes (steps that would start past DEADLINE_S are
# skipped and say so).
#   device: BUILD=<build dir> bash scripts/gpu_fp8.sh   (results: $OUT/summary.txt, $OUT/bench.jsonl)
#   EXTRA_SERVE_ARGS: more `seam serve` flags (e.g. --disable-output-overlap for its A/B); the serving
#   step also prints the GPU busy fraction and the host phases of /metrics.
# Floors (Llama-3.1-8B: 6.98e9 linear weights in 32 layers, a 0.525e9 bf16 head): decode = weight
# bytes read per step (linears at 1 byte fp8 / 2 bf16, + the head) / SEAM_FLOOR_BW (scripts/floor_bandwidth.sh:
# 4.3e12 B/s on the H200, an estimate on an H100); prefill = linear
# FLOPs / 1.58e15 (FP8 dense peak; bf16: 0.79e15) + causal attention FLOPs / 0.79e15 (bf16).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/serve_wait.sh"
source "$(dirname "${BASH_SOURCE[0]}")/floor_bandwidth.sh"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT=${OUT:-/tmp/seam_out}
MODELS=${MODELS:-/tmp/seam_models_config}
BUILD=${BUILD:-/tmp/seam_head/build-gpu}
MODEL=${MODEL:-llama-3.1-8b}
DEADLINE_S=${DEADLINE_S:-225}
BENCH_TIMEOUT=${BENCH_TIMEOUT:-60}
PORT=${PORT:-30123}
mkdir -p "$OUT" "$MODELS"
export LD_LIBRARY_PATH="$ROOT/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
START=$(date +%s)
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }
in_time() {  # step name: false (and a note) once past the deadline
  if (($(date +%s) - START > DEADLINE_S)); then
    log "skipped $1: past ${DEADLINE_S}s"
    return 1
  fi
}
[ -x "$BUILD/seam" ] || { log "no $BUILD/seam: set BUILD to a built folder"; exit 1; }
DUMMY=(--load-format dummy)

# bench label quant args...: one bench-one-batch run; prints the JSON's timings and the floor.
bench() {
  local label=$1 quant=$2
  shift 2
  local q=()
  [ "$quant" = fp8 ] && q=(--quantization fp8)
  in_time "$label" || return 0
  local line
  local t0=$(date +%s)
  line=$(timeout "$BENCH_TIMEOUT" "$BUILD/seam" bench-one-batch --device cuda --dtype bfloat16 \
    --model-path "$MODELS/$MODEL" ${q[@]+"${q[@]}"} "${DUMMY[@]}" "$@" 2>>"$OUT/bench_stderr.log" | tail -1)
  echo "== $label $quant: $(($(date +%s) - t0)) s (load included)" >> "$OUT/bench_stderr.log"
  echo "$label | $quant | $* | $line" >> "$OUT/bench.jsonl"
  echo "$line" | LABEL="$label" QUANT="$quant" ARGS="$*" python3 -c '
import json, os, sys
try:
    d = json.loads(sys.stdin.read())
except Exception:
    print(os.environ["LABEL"], os.environ["QUANT"], "| no result (timeout or error: see bench_stderr.log)"); sys.exit()
label, quant, args = os.environ["LABEL"], os.environ["QUANT"], os.environ["ARGS"].split()
get = lambda f: int(args[args.index(f) + 1]) if f in args else 0
keys = ("latency_s", "tok_s", "_replays", "eager_steps")
shown = " ".join(f"{k}={v:.6g}" for k, v in d.items() if isinstance(v, (int, float)) and k.endswith(keys))
floor = ""
wb = 6.98e9 * (1 if quant == "fp8" else 2) + 0.525e9 * 2
if "--mode" in args and "extend" in args:
    # 2 FLOPs per linear weight per token (the head runs on the last token only), causal
    # attention 2 * L^2 * 4096 per layer (QK^T and PV, half the square each), 32 layers.
    n = get("--input-len") * max(1, get("--batch-size"))
    lin = 2 * 6.98e9 * n
    att = 32 * 2 * get("--input-len") ** 2 * 4096 * max(1, get("--batch-size"))
    peak = 1.58e15 if quant == "fp8" else 0.79e15
    t = lin / peak + att / 0.79e15
    floor = f"floor {t * 1e3:.2f} ms = {n / t:,.0f} tok/s (linear {lin:.3g} FLOP / {peak:.3g}, attention {att:.3g} / 0.79e15)"
else:
    bw = float(os.environ["SEAM_FLOOR_BW"])
    t = wb / bw
    batch = max(1, get("--batch-size"))
    floor = f"floor {t * 1e3:.3f} ms/step = {batch / t:,.0f} tok/s ({wb / 1e9:.2f} GB / {bw / 1e12:.2f} TB/s)"
print(f"{label} {quant} | {shown} | {floor}")
' | tee -a "$OUT/summary.txt"
}

log "fp8 linear bench $(date -u +%T) build $BUILD model $MODEL ${DUMMY[*]}; floors at $SEAM_FLOOR_BW B/s ($SEAM_FLOOR_BW_WHY)"
if [ ! -f "$MODELS/$MODEL/config.json" ]; then
  log "make $MODEL (config only)"
  timeout 120 python3 "$ROOT/tools/make_random_models.py" "$MODELS" --only "$MODEL" --config-only 2>&1 \
    | grep -v -i warn | tail -2 | tee -a "$OUT/summary.txt"
fi
# Only the graphs a run replays are captured (decode batch 1 / 64; no piecewise graphs for decode).
bench "decode b1" fp8 --batch-size 1 --input-len 128 --output-len 64 --cuda-graph-bs 1 --disable-piecewise-cuda-graph
bench "decode b64" fp8 --batch-size 64 --input-len 128 --output-len 128 --cuda-graph-bs 64 --disable-piecewise-cuda-graph
bench "prefill 4096" fp8 --mode extend --batch-size 1 --input-len 4096 --reps 3 --cuda-graph-bs 1

# serving: 1,024 in / 256 out at 64 clients (throughput) and at 1 client (TPOT), one server.
if in_time serving; then
  "$BUILD/seam" serve --model-path "$MODELS/$MODEL" --device cuda --dtype bfloat16 --quantization fp8 "${DUMMY[@]}" \
    --port "$PORT" --max-running-requests 256 --context-length 4096 --disable-radix-cache ${EXTRA_SERVE_ARGS:-} \
    > "$OUT/serve_fp8.log" 2>&1 &
  pid=$!
  up=0
  wait_healthy "$PORT" $pid 90 && up=1
  if [ $up = 1 ]; then
    grep -E "ready in|KV pool" "$OUT/serve_fp8.log" | tail -2 | tee -a "$OUT/summary.txt"
    for cc in 64 1; do
      n=$((cc == 1 ? 8 : 128))
      in_time "serving at $cc clients" || continue
      log "serving $MODEL fp8, $cc clients, $n prompts, 1024 in / 256 out $(date -u +%T)"
      timeout 60 "$BUILD/seam" bench-serving --port "$PORT" --num-prompts $n --random-input-len 1024 \
        --random-output-len 256 --random-range-ratio 1 --max-concurrency $cc 2>&1 | tee -a "$OUT/serving_fp8.log" \
        | grep -E "Successful requests|Output token throughput|(Mean|Median) (TTFT|TPOT|ITL)" | tee -a "$OUT/summary.txt"
    done
    echo "targets: 64 clients >= 6,500 output tok/s (bf16: 4,580); 1 client TPOT <= 2.6 ms" | tee -a "$OUT/summary.txt"
    curl -s "localhost:$PORT/metrics" | grep -E "^seam_(eager|captures|kv_pool_tokens|gpu_busy_fraction|host_ms_per_step)" \
      | tee -a "$OUT/summary.txt"
  else
    log "serve did not come up in 90 s: tail of serve_fp8.log"
    tail -5 "$OUT/serve_fp8.log" | tee -a "$OUT/summary.txt"
  fi
  kill $pid 2>/dev/null
  wait $pid 2>/dev/null
fi
# The bf16 rows last (docs/performance.md has them too): skipped first when time runs out.
bench "decode b1" bf16 --batch-size 1 --input-len 128 --output-len 64 --cuda-graph-bs 1 --disable-piecewise-cuda-graph
bench "decode b64" bf16 --batch-size 64 --input-len 128 --output-len 128 --cuda-graph-bs 64 --disable-piecewise-cuda-graph
bench "prefill 4096" bf16 --mode extend --batch-size 1 --input-len 4096 --reps 3 --cuda-graph-bs 1
log "targets: fp8 decode b1 <= 2.3 ms (floor ~1.9), prefill 4096 >= 65,000 tok/s, decode b64 >= 18,000 tok/s"
log "done after $(($(date +%s) - START)) s"
