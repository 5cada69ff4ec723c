#!/usr/bin/env bash
# FP8 KV cache on the GPU (issue 22 item 4): decode batch 1 at a 32,768-token context, bf16 KV
# against --kv-cache-dtype fp8_e4m3, on the random-weight Llama-3.1-8B shape (bf16 weights),
# with the memory floor of each: (weights read by a decode step + the KV bytes of the
# context) / 4.3e12 B/s. The FP8 cache halves the KV bytes (65,536 B a token instead of
# 131,072), so the step should get faster by about the KV half: 2.15 GB / 4.3e12 = 0.5 ms.
#
#   device:  bash scripts/gpu_fp8_kv.sh        (after a build: BUILD must hold `seam`)
#
# BUILD (default /tmp/seam_head/build-gpu), MODELS (default /tmp/seam_models/llama-3.1-8b: made
# with tools/make_random_models.py --no-reference when absent), OUT (default /tmp/seam_out).
# Each run is bounded by a timeout (RUN_TIMEOUT, default 55 s); the two take about a minute
# once the model exists. Only the decode graph of batch 1 is captured (the 32k-token fill runs
# eagerly), so the timed steps are decode-graph replays.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD=${BUILD:-/tmp/seam_head/build-gpu}
MODELS=${MODELS:-/tmp/seam_models/llama-3.1-8b}
OUT=${OUT:-/tmp/seam_out}
CTX=${CTX:-32768}
RUN_TIMEOUT=${RUN_TIMEOUT:-55}
mkdir -p "$OUT"
export PATH="/usr/local/cuda/bin:$PATH"
[ -x "$BUILD/seam" ] || { echo "no $BUILD/seam: build first"; exit 1; }
if [ ! -f "$MODELS/config.json" ]; then
  timeout 600 python3 "$ROOT/tools/make_random_models.py" "$(dirname "$MODELS")" --only "$(basename "$MODELS")" \
    --no-reference 2>&1 | grep -v Warning | tail -3
fi

results=()
for kv in auto fp8_e4m3; do
  cmd=("$BUILD/seam" bench-one-batch --device cuda --dtype bfloat16 --model-path "$MODELS" --kv-cache-dtype "$kv"
       --mode decode --batch-size 1 --input-len "$CTX" --reps 20 --cuda-graph-bs 1 --disable-piecewise-cuda-graph)
  echo "== ${cmd[*]}"
  timeout "$RUN_TIMEOUT" "${cmd[@]}" > "$OUT/fp8_kv_$kv.stdout" 2> "$OUT/fp8_kv_$kv.stderr"
  rc=$?
  line=$(tail -1 "$OUT/fp8_kv_$kv.stdout")
  grep -E "KV pool|error|Error" "$OUT/fp8_kv_$kv.stderr" | tail -3
  echo "kv=$kv rc=$rc $line" | tee -a "$OUT/fp8_kv.jsonl"
  results+=("$kv $line")
done

# Floors from the model's config: a decode step reads every weight but the embedding table
# (one row), in bf16, plus the context's K and V of every layer.
python3 - "$MODELS/config.json" "$CTX" "${results[@]}" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1])); ctx = int(sys.argv[2])
h, inter, L = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"]
nh, nkv = c["num_attention_heads"], c.get("num_key_value_heads", c["num_attention_heads"])
d = c.get("head_dim") or h // nh
vocab = c["vocab_size"]
per_layer = h * nh * d + 2 * h * nkv * d + nh * d * h + 3 * h * inter + 2 * h
weights = 2 * (L * per_layer + vocab * h + h)  # + the head (untied) and the final norm
bw = 4.3e12
for line in sys.argv[3:]:
    kv, _, js = line.partition(" ")
    kv_bytes = ctx * L * nkv * d * 2 * (1 if kv == "fp8_e4m3" else 2)
    floor_ms = (weights + kv_bytes) / bw * 1e3
    try:
        lat_ms = json.loads(js)["decode_median_latency_s"] * 1e3
        path = json.loads(js).get("decode_path", "?")
        got = f"{lat_ms:.3f} ms ({path}), {lat_ms / floor_ms:.2f}x the floor"
    except Exception:
        got = "no result"
    print(f"kv {kv:9s}: weights {weights / 1e9:.2f} GB + KV {kv_bytes / 1e9:.2f} GB -> floor {floor_ms:.3f} ms; measured {got}")
kv_half = ctx * L * nkv * d * 2 / bw * 1e3
print(f"expected gain from the FP8 cache: the KV half, {kv_half:.3f} ms")
EOF
