#!/usr/bin/env bash
# FP8 KV cache on the GPU (issue 22 item 4): decode batch 1 at a 32,768-token context on the
# random-weight Llama-3.1-8B shape with FP8 weights (--quantization fp8), --kv-cache-dtype auto
# (bf16) against fp8_e4m3, each with its memory floor: (weights read by a decode step + the KV
# bytes of the context) / SEAM_FLOOR_BW (scripts/floor_bandwidth.sh: 4.3e12 B/s on the H200), and the KV pool's token count of each at the default memory
# budget (--max-total-tokens set past it, so the pool is sized by memory: FP8 should hold twice the
# tokens). The FP8 cache halves the KV bytes (65,536 B a token instead of 131,072), so the step
# should get faster by about the KV half: 2.15 GB / 4.3e12 = 0.5 ms. Target: <= 2.8 ms (floor
# ~2.4 ms; bf16 weights and KV: 5.07 ms).
#
#   device:  BUILD=<build dir> bash scripts/gpu_fp8_kv.sh     (results: $OUT/summary.txt)
#
# Builds nothing: BUILD (default /tmp/seam_head/build-gpu) must hold `seam`. MODEL_DIR (default
# /tmp/seam_models_config/llama-3.1-8b) is a config-only folder (tools/make_random_models.py
# --config-only: no weights written), run with --load-format dummy. OUT (default /tmp/seam_out).
# Each run is bounded by RUN_TIMEOUT (default 75 s); the whole takes well under 4 minutes. Only
# the decode graph of batch 1 is captured (the 32k-token fill runs eagerly), so the timed steps
# are decode-graph replays.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/floor_bandwidth.sh"
BUILD=${BUILD:-/tmp/seam_head/build-gpu}
MODEL_DIR=${MODEL_DIR:-/tmp/seam_models_config/llama-3.1-8b}
OUT=${OUT:-/tmp/seam_out}
CTX=${CTX:-32768}
RUN_TIMEOUT=${RUN_TIMEOUT:-75}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$ROOT/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
log() { echo "$*" | tee -a "$OUT/summary.txt"; }
[ -x "$BUILD/seam" ] || { log "no $BUILD/seam: set BUILD to a built folder"; exit 1; }
if [ ! -f "$MODEL_DIR/config.json" ]; then
  timeout 120 python3 "$ROOT/tools/make_random_models.py" "$(dirname "$MODEL_DIR")" --only "$(basename "$MODEL_DIR")" \
    --config-only 2>&1 | grep -v -i warn | tail -2
fi
log "== fp8 KV cache, decode b1 at $CTX tokens, FP8 weights, $(date -u +%T), build $BUILD"

results=()
# KV_CASES: auto (bf16 cache), fp8_e4m3, and fp8_regs (fp8_e4m3 with SEAM_DECODE_FP8_REGS=1: the
# register-fragment decode kernel, twenty-ninth pass); default all three, interleaved in one call.
for kv in ${KV_CASES:-auto fp8_e4m3 fp8_regs}; do
  regs=0
  dtype=$kv
  [ "$kv" = fp8_regs ] && regs=1 && dtype=fp8_e4m3
  cmd=(env SEAM_DECODE_FP8_REGS=$regs "$BUILD/seam" bench-one-batch --device cuda --dtype bfloat16 --model-path "$MODEL_DIR" --load-format dummy
       --quantization fp8 --kv-cache-dtype "$dtype" --max-total-tokens 1000000000
       --mode decode --batch-size 1 --input-len "$CTX" --reps 20 --cuda-graph-bs 1 --disable-piecewise-cuda-graph)
  echo "== ${cmd[*]}" >> "$OUT/summary.txt"
  t0=$(date +%s)
  timeout "$RUN_TIMEOUT" "${cmd[@]}" > "$OUT/fp8_kv_$kv.stdout" 2> "$OUT/fp8_kv_$kv.stderr"
  rc=$?
  line=$(tail -1 "$OUT/fp8_kv_$kv.stdout")
  grep -E "KV pool|error|Error" "$OUT/fp8_kv_$kv.stderr" | tail -3 | tee -a "$OUT/summary.txt"
  echo "kv=$kv rc=$rc $(($(date +%s) - t0)) s $line" | tee -a "$OUT/fp8_kv.jsonl" >> "$OUT/summary.txt"
  results+=("$kv $line")
done

# Floors from the model's config: a decode step reads every linear weight (1 byte each, FP8)
# and their per-channel scales, the bf16 head and norms (the embedding table: one row), plus
# the context's K and V of every layer.
python3 - "$MODEL_DIR/config.json" "$CTX" "${results[@]}" <<'PY' | tee -a "$OUT/summary.txt"
import json, os, sys
c = json.load(open(sys.argv[1])); ctx = int(sys.argv[2])
h, inter, L = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"]
nh, nkv = c["num_attention_heads"], c.get("num_key_value_heads", c["num_attention_heads"])
d = c.get("head_dim") or h // nh
vocab = c["vocab_size"]
linear = h * nh * d + 2 * h * nkv * d + nh * d * h + 3 * h * inter
scales = 4 * (nh * d + 2 * nkv * d + h + 2 * inter + h)  # float32, one per output channel
weights = L * (linear + scales + 2 * 2 * h) + 2 * (vocab * h + h)
bw = float(os.environ["SEAM_FLOOR_BW"])
pools = {}
for line in sys.argv[3:]:
    kv, _, js = line.partition(" ")
    kv_bytes = ctx * L * nkv * d * 2 * (1 if kv.startswith("fp8") else 2)
    floor_ms = (weights + kv_bytes) / bw * 1e3
    try:
        j = json.loads(js)
        lat_ms = j["decode_median_latency_s"] * 1e3
        pools[kv] = j.get("kv_pool_tokens")
        got = f"{lat_ms:.3f} ms ({j.get('decode_path', '?')}), {lat_ms / floor_ms:.2f}x the floor; KV pool {pools[kv]} tokens"
    except Exception:
        got = "no result (timeout or error: see fp8_kv_<kv>.stderr)"
    print(f"kv {kv:9s}: weights {weights / 1e9:.2f} GB + KV {kv_bytes / 1e9:.2f} GB -> floor {floor_ms:.3f} ms at {bw / 1e12:.2f} TB/s; measured {got}")
kv_half = ctx * L * nkv * d * 2 / bw * 1e3
print(f"expected gain from the FP8 cache: the KV half, {kv_half:.3f} ms; target fp8_e4m3 <= 2.8 ms")
if pools.get("auto") and pools.get("fp8_e4m3"):
    print(f"KV pool tokens: fp8_e4m3 / auto = {pools['fp8_e4m3']} / {pools['auto']} = {pools['fp8_e4m3'] / pools['auto']:.3f} (2 expected)")
PY
