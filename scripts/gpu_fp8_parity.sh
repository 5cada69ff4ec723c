#!/usr/bin/env bash
# Issue 22's FP8 model parity on the H200: for each FP8 checkpoint format, a random-weight model
# of a real shape written in that format, seam's CUDA logits (float32 and bf16) against the CPU
# backend's float32 reference (dequantized weights x the same activation quantization), bounded by
# the yardstick of tests/cuda/cuda_fp8_model_parity_test.cpp (the same reference with bf16-rounded
# activations: float32 <= 2 Y + 1e-4; bf16 <= 1.5 B + 4 Y + 1e-3, B = bf16's own error on the
# unquantized source model on this GPU; argmax and the 17-token prompt's greedy ids equal where the
# margin allows), and, where transformers can load the folder (it needs the
# compressed-tensors package; nothing is installed), transformers' error against the same
# reference beside seam's: seam must be no worse (<= 1.5 x transformers' + 1e-4: each is a draw of
# the model's FP8 noise, whose draws spread by up to 1.42x on the CPU).
#
#   device:  BUILD=<build dir> bash scripts/gpu_fp8_parity.sh   (results: $OUT/summary.txt, $OUT/tests.log)
#   one call that builds first (carry .carry, scripts/make_carry.sh; the build's time counts):
#     S=$(date +%s); SEAM_GPU_TARGETS="seam cuda_fp8_model_parity_test" bash scripts/gpu_suite.sh configure
#     build > "$OUT/suite.log" 2>&1; START_EPOCH=$S bash scripts/gpu_fp8_parity.sh
#
# BUILD (default $ROOT/build-gpu, scripts/gpu_suite.sh's) must hold `seam` and
# `cuda_fp8_model_parity_test` (SEAM_GPU_TARGETS="seam cuda_fp8_model_parity_test" bash
# scripts/gpu_suite.sh configure build). Steps, with estimated times on the H200 host (16 cores):
#   make    tools/make_random_models.py --one-file --no-reference: the shape's bf16 model.safetensors
#           (16 GB; quantize-fp8 reads one file), made on the GPU and written out: ~75 s a shape
#   quant   seam quantize-fp8 --format F: ~7e9 linear weights (14 ns a weight of CPU time on the
#           dev box, decoding and quantizing now over the host's threads) and a 9 GB write: ~60 s
#           a folder
#   test    cuda_fp8_model_parity_test on the folder: the CPU float32 engine (1 + 17 + 100 prompt
#           tokens twice, plain and with bf16-rounded activations: fp8_cpu's product ran at 3.5 G
#           multiply-adds a second a core at 64+ rows, 2.4 at 17, 0.33 at 1 on the dev box, so ~7e9 a
#           token on 16 cores: ~1.4 + 3 + 12 s a pass; load and the head ~20 s), then the CUDA
#           engines in float32 and bf16: ~105 s a folder, + ~30 s for the first folder of a shape
#           (B: the bf16 source model in float32 and bf16 on the GPU, then kept in $MODELS/dump)
#   hf      transformers on the folder (formats in HF_FORMATS, default ct-channel), float32 and bf16,
#           the test's three prompts, against the test's dump of the CPU reference: ~60 s a folder
# PLAN (shape:format, in priority order) defaults to the two GPU routes on Llama-3.1-8B first
# (fp8-block: 128-block -> seam's wgmma GEMM; ct-channel: per-channel weights, dynamic per-token
# activations -> cuBLASLt, then transformers on it), then Qwen3-8B's two, then Llama-3.1-8B's other
# five formats. A step starts only if its estimate ends before DEADLINE_S (default 570 s; the device
# call's limit is 600 s): in one call that is the Llama shape's two routes and transformers beside
# ct-channel (~8.5 minutes by the estimates: 75 + 195 + 165 + 60 s). The rest are listed as skipped;
# a second call with the same MODELS (while the machine is warm) continues where this one stopped
# (finished items are recorded in $MODELS/done.txt and the bf16 sources are kept). Disk (64 GB): at
# most both bf16 sources (32 GB) and one FP8 folder (<= 9.5 GB) at a time: each FP8 folder is
# deleted after its test, the bf16 sources once every PLAN item is done.
# Every format in one call: the four-layer shapes (tools/make_random_models.py: llama-3.1-8b-4l,
# qwen3-8b-4l: the real layers and vocabulary, ~4 GB), e.g. PLAN="llama-3.1-8b-4l:fp8-block ..."
# EST_MAKE=25 EST_QUANT=12 EST_TEST=40 EST_SOURCE=15 EST_HF=30.
# SEAM_FP8_PARITY_LONG (default 100) is the long prompt's length (the CPU reference's cost).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT=${OUT:-/tmp/seam_out}
BUILD=${BUILD:-$ROOT/build-gpu}
MODELS=${MODELS:-/tmp/seam_fp8_parity}
DEADLINE_S=${DEADLINE_S:-570}
PLAN=${PLAN:-"llama-3.1-8b:fp8-block llama-3.1-8b:ct-channel qwen3-8b:fp8-block qwen3-8b:ct-channel llama-3.1-8b:ct-tensor-static llama-3.1-8b:ct-block llama-3.1-8b:fp8-tensor llama-3.1-8b:fbgemm llama-3.1-8b:modelopt"}
HF_FORMATS=${HF_FORMATS:-ct-channel}
EST_MAKE=${EST_MAKE:-75}
EST_QUANT=${EST_QUANT:-60}
EST_TEST=${EST_TEST:-105}
EST_SOURCE=${EST_SOURCE:-30}
EST_HF=${EST_HF:-60}
mkdir -p "$OUT" "$MODELS/bf16" "$MODELS/fp8" "$MODELS/dump"
touch "$MODELS/done.txt"
export LD_LIBRARY_PATH="$ROOT/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# START_EPOCH: when the device call began (a call that builds first counts its build time too).
START=${START_EPOCH:-$(date +%s)}
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }
elapsed() { echo $(($(date +%s) - START)); }
fits() {  # name seconds: true when a step of that estimate ends before the deadline, else a note
  if (($(elapsed) + $2 > DEADLINE_S)); then
    log "skipped $1: $(elapsed) s + ~$2 s is past DEADLINE_S=${DEADLINE_S}"
    return 1
  fi
}
for b in seam cuda_fp8_model_parity_test; do
  [ -x "$BUILD/$b" ] || { log "no $BUILD/$b: build it (SEAM_GPU_TARGETS=\"seam cuda_fp8_model_parity_test\")"; exit 1; }
done
log "fp8 model parity $(date -u +%T) build $BUILD models $MODELS long prompt ${SEAM_FP8_PARITY_LONG:-100}"
df -h "$MODELS" | tail -1 | tee -a "$OUT/summary.txt"

make_shape() {  # shape: its bf16 model.safetensors, made unless there
  local shape=$1
  [ -f "$MODELS/bf16/$shape/model.safetensors" ] && return 0
  fits "make $shape" "$EST_MAKE" || return 1
  local t0
  t0=$(date +%s)
  timeout 300 python3 "$ROOT/tools/make_random_models.py" "$MODELS/bf16" --only "$shape" --no-reference --one-file 2>&1 \
    | grep -v -i warn | tail -2 | tee -a "$OUT/summary.txt"
  [ -f "$MODELS/bf16/$shape/model.safetensors" ] || { log "make $shape failed"; return 1; }
  log "made $shape in $(($(date +%s) - t0)) s"
}

# folder name: transformers' logits of the test's prompts against the test's CPU reference, beside seam's.
hf_compare() {
  local dir=$1 name=$2
  timeout 240 python3 - "$dir" "$MODELS/dump/$name.json" "$name" <<'EOF' 2>&1 | grep -v -i warn | tee -a "$OUT/summary.txt"
import importlib.metadata, importlib.util, json, sys
folder, dump, name = sys.argv[1:4]
cfg = json.load(open(folder + "/config.json"))
method = cfg.get("quantization_config", {}).get("quant_method", "modelopt (hf_quant_config.json)")
# compressed-tensors folders need its package; transformers' own "fp8" (and fbgemm_fp8, modelopt)
# integrations are tried as they are, and a failed load is reported.
need = ("torch", "transformers") + (("compressed_tensors",) if method == "compressed-tensors" else ())
missing = [m for m in need if importlib.util.find_spec(m) is None]
if missing:
    print(f"{name}: transformers comparison unavailable: no {', '.join(missing)} package on this machine")
    sys.exit(0)
import torch
import transformers
from transformers import AutoModelForCausalLM
# transformers >= 4.56 takes dtype=; older ones torch_dtype= (and would take dtype= silently into the config)
v = tuple(int(x) for x in transformers.__version__.split(".")[:2] if x.isdigit())
dtype_kw = "dtype" if v >= (4, 56) else "torch_dtype"
ct = importlib.metadata.version("compressed-tensors") if importlib.util.find_spec("compressed_tensors") else "absent"
print(f"{name}: quant_method {method}: transformers {transformers.__version__}, compressed-tensors {ct}, "
      f"torch {torch.__version__}")
d = json.load(open(dump))
cpu = [torch.tensor(x, dtype=torch.float64) for x in d["cpu_float32"]]
rel = lambda a, b: float((a.double() - b).norm() / b.norm())
for dtype, key in ((torch.float32, "gpu_float32"), (torch.bfloat16, "gpu_bfloat16")):
    try:
        m = AutoModelForCausalLM.from_pretrained(folder, device_map="cuda", **{dtype_kw: dtype})
    except Exception as e:
        print(f"{name}: transformers comparison unavailable: loading failed: {type(e).__name__}: {str(e)[:300]}")
        sys.exit(0)
    m.eval()
    try:  # what transformers made of the layer: its FP8 module, or a plain Linear of dequantized weights
        lin = m.model.layers[0].mlp.down_proj
        print(f"{name}: transformers loaded the folder in {m.dtype}: down_proj {type(lin).__name__}, "
              f"weight {lin.weight.dtype}")
    except AttributeError:
        print(f"{name}: transformers loaded the folder in {m.dtype}")
    for i, ids in enumerate(d["prompts"]):
        with torch.no_grad():
            lt = m(torch.tensor([ids], device="cuda")).logits[0, -1].float().cpu()
        seam = torch.tensor(d[key][i])
        e_hf, e_seam = rel(lt, cpu[i]), rel(seam, cpu[i])
        ok = e_seam <= 1.5 * e_hf + 1e-4
        print(f"{name} {str(dtype)[6:]} prompt {len(ids)} tokens: rel err vs cpu float32: transformers {e_hf:.3g}, "
              f"seam {e_seam:.3g} (yardstick Y {d['yardstick'][i]:.3g}): seam {'no worse' if ok else 'WORSE'} "
              f"(<= 1.5 x transformers + 1e-4)")
    del m
    torch.cuda.empty_cache()
EOF
}

n_pass=0
n_fail=0
skipped=0
for item in $PLAN; do
  shape=${item%%:*}
  fmt=${item#*:}
  name="$shape-$fmt"
  if grep -qx "$name" "$MODELS/done.txt"; then
    log "$name: done in an earlier call (see its summary)"
    continue
  fi
  make_shape "$shape" || { skipped=1; continue; }
  hf=0
  [[ " $HF_FORMATS " == *" $fmt "* ]] && hf=1
  first=0
  ls "$MODELS/dump/bf16_own_error_${shape}_"*.json > /dev/null 2>&1 || first=1
  fits "$name" $((EST_QUANT + EST_TEST + first * EST_SOURCE)) || { skipped=1; continue; }
  dir="$MODELS/fp8/$name"
  rm -rf "$dir"
  t0=$(date +%s)
  if ! timeout 300 "$BUILD/seam" quantize-fp8 --model-path "$MODELS/bf16/$shape" --out "$dir" --format "$fmt" \
    2>&1 | tail -1 | tee -a "$OUT/summary.txt"; then
    log "$name: quantize-fp8 failed"
  fi
  t1=$(date +%s)
  log "$name: quantize-fp8 $((t1 - t0)) s ($(du -sh "$dir" 2>/dev/null | cut -f1))"
  SEAM_FP8_MODELS="$dir" SEAM_FP8_PARITY_DUMP="$MODELS/dump" SEAM_FP8_PARITY_SOURCE="$MODELS/bf16/$shape" timeout 400 "$BUILD/cuda_fp8_model_parity_test" \
    > "$MODELS/test.log" 2>&1
  rc=$?
  cat "$MODELS/test.log" >> "$OUT/tests.log"
  # The measurement lines (every figure) and the failures go to the summary.
  grep -E "^$name |^$shape \(unquantized\)|Failure|Expected|SKIPPED|which is|actual" "$MODELS/test.log" | head -60 | tee -a "$OUT/summary.txt"
  ran=1
  if grep -q "\[  SKIPPED \] 1 test" "$MODELS/test.log"; then
    ran=0
    log "$name: SKIPPED ($(grep -m1 -A1 "Skipped" "$MODELS/test.log" | tail -1))"
  elif [ $rc = 0 ] && grep -q "\[  PASSED  \] 1 test" "$MODELS/test.log"; then
    n_pass=$((n_pass + 1))
    log "$name: PASSED ($(($(date +%s) - t1)) s)"
  else
    n_fail=$((n_fail + 1))
    log "$name: FAILED rc $rc ($(($(date +%s) - t1)) s; the whole log in tests.log)"
  fi
  if [ $hf = 1 ] && [ -f "$MODELS/dump/$name.json" ]; then
    if fits "$name transformers" "$EST_HF"; then
      t2=$(date +%s)
      hf_compare "$dir" "$name"
      log "$name: transformers comparison $(($(date +%s) - t2)) s"
    fi
  fi
  rm -rf "$dir"
  if [ $ran = 1 ]; then echo "$name" >> "$MODELS/done.txt"; else skipped=1; fi
done
if [ $skipped = 0 ]; then
  rm -rf "$MODELS/bf16"
  log "every PLAN item done: the bf16 sources deleted"
else
  log "some PLAN items not done (past the deadline, or a step failed): the bf16 sources kept in $MODELS/bf16; run again to continue"
fi
log "$n_pass passed, $n_fail failed, after $(elapsed) s"
