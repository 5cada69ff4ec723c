#!/usr/bin/env bash
# Issue 23's GPU figures for the mixture-of-experts models, in the style of gpu_families.sh.
# The whole Qwen3-30B-A3B (61 GB in bf16) and Mixtral-8x7B (93 GB) do not fit the device's 64 GB
# disk, so they are timed with --load-format dummy from config.json + tokenizer.json alone
# (tools/make_random_models.py --config-only; random weights filled on the GPU, no file I/O);
# transformers parity runs on shapes that fit, one at a time, deleted after.
#
#   device: bash scripts/gpu_moe.sh                       (everything; more than one 10-minute call)
#           STEPS="build bench serve" bash scripts/gpu_moe.sh
#           STEPS="make parity delete" PARITY_SHAPES=qwen3-30b-a3b-24l bash scripts/gpu_moe.sh
#
# STEPS (default "build configs make parity delete bench serve"):
#   build    gpu_suite.sh configure + build of seam, hf_parity_test, cuda_moe_test, cuda_moe_grouped_test,
#            cuda_dummy_load_test, cuda_qk_norm_rope_store_test, cuda_moe_combine_test, cuda_moe_align_test,
#            cuda_fp8_moe_test, cuda_rms_norm_test, seam_kernel_bench into $BUILD (incremental; 3-5 min cold on 16 cores)
#   test     cuda_moe_test (default switches, then SEAM_MOE_GROUPED_WGMMA=0, 1 and 3), cuda_moe_grouped_test,
#            cuda_dummy_load_test, cuda_qk_norm_rope_store_test, cuda_moe_combine_test,
#            cuda_moe_align_test, cuda_fp8_moe_test (FP8 experts, dequantized at load, against the CPU) and
#            cuda_rms_norm_test
#            (~1 min: the grouped test's CPU reference at model shapes)
#   kbench   seam_kernel_bench --moe: the grouped GEMMs (gate_up, down) at 4,096 and 512 tokens,
#            wmma against the wgmma kernels, the persistent one included; then qk_norm_rope_store,
#            moe_combine and moe_align in both their forms at 4,096, 64 and 1 tokens (seconds)
#   configs  config.json + tokenizer.json of qwen3-30b-a3b and mixtral-8x7b in $MODELS/dummy (~10 s)
#   make / parity / delete   per shape of PARITY_SHAPES (default qwen1.5-moe-a2.7b mixtral-8x7b-16l
#            qwen3-30b-a3b-24l): make with transformers' float32/bf16 references, hf_parity_test
#            (float32 and bf16, prompts of 1, 17, 1,000 tokens, 32 greedy ids), delete
#            (~2-4 min a shape: writing 29-47 GB and reading it back twice)
#   bench    bench-one-batch, bf16, dummy: qwen3-30b-a3b decode b1 and b64 (input 128, output 64),
#            prefill 4,096 (--mode extend); mixtral-8x7b decode b1; each line with its floor
#            (tools/moe_floor.py). b64 and prefill run once per GROUPED_VARIANTS value
#            (SEAM_MOE_GROUPED: 1 the rule, 0 gathered GEMVs only, 2 grouped GEMMs wherever they
#            apply; default "1"; "1 0 2" measures gathered against grouped in the same call) (~2 min)
#   ab       the bench's four runs (b1, b64, prefill 4,096, Mixtral b1) once per MOE_VARIANTS entry:
#            ';'-separated groups of env assignments, '-' for none. Default: the new MoE kernels
#            (the rule), the skinny path on the first tensor-core kernels, the grouped GEMMs on
#            wmma, the skinny path on CUDA cores, then every new kernel off (the paths before
#            them): "-;SEAM_MOE_SKINNY_MMA=1;SEAM_MOE_GROUPED_WGMMA=0;SEAM_MOE_SKINNY_MMA=0;
#            SEAM_MOE_GATHER_STREAM=0 SEAM_MOE_ROUTE_WARP=0 SEAM_MOE_SKINNY=0 SEAM_MOE_GROUPED_PIPELINE=0
#            SEAM_MOE_GROUPED_WGMMA=0" (~1.5-2 min a variant: four dummy loads). AB_CASES picks the runs
#            (default "extend b1 b64 mixtral": Qwen3 prefill 4,096, b1, b64, Mixtral b1)
#   serve    seam serve (dummy qwen3-30b-a3b) + seam bench-serving, 1,024 in / 256 out, 1 client
#            (SERVE_PROMPTS_1, default 6) then 64 clients (SERVE_PROMPTS_64, default 128) against
#            one server, mixed chunk off, then a second server with it on; the graph counters from
#            /metrics after each run (~2-3 min)
# Results: $OUT/summary.txt (one line a run), $OUT/bench.jsonl, logs beside them.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/serve_wait.sh"
source "$(dirname "${BASH_SOURCE[0]}")/floor_bandwidth.sh"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT=${OUT:-/tmp/seam_out}
MODELS=${MODELS:-/tmp/seam_models}
BUILD=${BUILD:-$ROOT/build-gpu}
STEPS=" ${STEPS:-build configs make parity delete bench serve} "
PARITY_SHAPES=${PARITY_SHAPES:-qwen1.5-moe-a2.7b mixtral-8x7b-16l qwen3-30b-a3b-24l}
GROUPED_VARIANTS=${GROUPED_VARIANTS:-1}
AB_CASES=${AB_CASES:-extend b1 b64 mixtral}
DUMMY="$MODELS/dummy"
PORT=${PORT:-30123}
step() { [[ "$STEPS" == *" $1 "* ]]; }
mkdir -p "$OUT" "$MODELS"
export PATH="/usr/local/cuda/bin:$PATH"
export LD_LIBRARY_PATH="$ROOT/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }

floor() {  # config, mode, n [context]: the line of tools/moe_floor.py
  python3 "$ROOT/tools/moe_floor.py" "$1/config.json" "${@:2}" 2>&1 | tail -1
}

bench() {  # label, model dir, floor args (quoted), bench-one-batch args...
  local label=$1 dir=$2 floor_args=$3; shift 3
  local line
  # shellcheck disable=SC2086
  line=$(timeout 240 "$BUILD/seam" bench-one-batch --device cuda --dtype bfloat16 --load-format dummy \
    --model-path "$dir" "$@" 2>>"$OUT/bench_stderr.log" | tail -1)
  echo "$label | $* | $line" >> "$OUT/bench.jsonl"
  echo "$label | $* | $(echo "$line" | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(" ".join(f"{k}={v:.6g}" for k,v in d.items() if isinstance(v,(int,float)) and k.endswith(("latency_s","tok_s","_replays","eager_steps","captures_after_seal"))))' 2>/dev/null || echo "FAILED (bench_stderr.log)")" | tee -a "$OUT/summary.txt"
  # shellcheck disable=SC2086
  echo "   $label $(floor "$dir" $floor_args)" | tee -a "$OUT/summary.txt"
}

if step build; then
  log "build $(date -u +%T)"
  SEAM_GPU_BUILD="$BUILD" SEAM_GPU_TARGETS="seam hf_parity_test cuda_moe_test cuda_moe_grouped_test cuda_dummy_load_test cuda_qk_norm_rope_store_test cuda_moe_combine_test cuda_moe_align_test cuda_fp8_moe_test cuda_rms_norm_test seam_kernel_bench" OUT="$OUT/build" \
    timeout 540 bash "$ROOT/scripts/gpu_suite.sh" configure build > "$OUT/build.log" 2>&1
  tail -3 "$OUT/build.log" | tee -a "$OUT/summary.txt"
fi

if step test; then
  log "tests $(date -u +%T)"
  for t in cuda_moe_test cuda_moe_grouped_test cuda_dummy_load_test cuda_qk_norm_rope_store_test cuda_moe_combine_test cuda_moe_align_test cuda_fp8_moe_test cuda_rms_norm_test; do
    timeout 180 "$BUILD/$t" 2>&1 | grep -E "OK \]|FAILED|PASSED|Failure" | tee -a "$OUT/summary.txt"
  done
  for v in 0 1 3; do  # the model's grouped path on wmma, the one-tile wgmma kernel, the persistent cp.async form
    SEAM_MOE_GROUPED_WGMMA=$v timeout 120 "$BUILD/cuda_moe_test" 2>&1 | grep -E "FAILED|PASSED|Failure" |
      sed "s/^/SEAM_MOE_GROUPED_WGMMA=$v /" | tee -a "$OUT/summary.txt"
  done
fi

if step kbench; then
  log "kernel bench (grouped MoE GEMMs) $(date -u +%T)"
  timeout 180 "$BUILD/seam_kernel_bench" --moe 2>&1 | tee -a "$OUT/summary.txt"
fi

if step configs; then
  log "configs $(date -u +%T)"
  for m in qwen3-30b-a3b mixtral-8x7b; do
    [ -f "$DUMMY/$m/config.json" ] || timeout 120 python3 "$ROOT/tools/make_random_models.py" "$DUMMY" --only "$m" \
      --config-only 2>&1 | grep -v -i warn | tail -1 | tee -a "$OUT/summary.txt"
  done
fi

for m in $PARITY_SHAPES; do
  if step make && [ ! -d "$MODELS/$m" ]; then
    log "make $m $(date -u +%T)"
    timeout 420 python3 "$ROOT/tools/make_random_models.py" "$MODELS" --only "$m" 2>&1 | grep -v -i warn | tail -2 \
      | tee -a "$OUT/summary.txt"
  fi
  if step parity; then
    log "parity $m $(date -u +%T)"
    filter=$(echo "$m" | tr -c 'a-zA-Z0-9\n' '_')
    SEAM_HF_MODELS="$MODELS" timeout 300 "$BUILD/hf_parity_test" --gtest_filter="Shapes/HfParity.*/$filter" 2>&1 \
      | grep -E "rel err|greedy|OK \]|FAILED|Failure|Expected|Which is|rror|SKIP" | head -40 | tee -a "$OUT/summary.txt"
  fi
  step delete && rm -rf "${MODELS:?}/$m"
done

if step bench; then
  q="$DUMMY/qwen3-30b-a3b" x="$DUMMY/mixtral-8x7b"
  log "bench $(date -u +%T) (floors: weight bytes / $SEAM_FLOOR_BW B/s, $SEAM_FLOOR_BW_WHY; tools/moe_floor.py)"
  bench qwen3-30b-a3b "$q" "decode 1" --batch-size 1 --input-len 128 --output-len 64 --cuda-graph-bs 1 \
    --piecewise-cuda-graph-tokens 128
  for v in $GROUPED_VARIANTS; do
    SEAM_MOE_GROUPED=$v bench "qwen3-30b-a3b SEAM_MOE_GROUPED=$v" "$q" "decode 64" --batch-size 64 --input-len 128 \
      --output-len 64 --cuda-graph-bs 64 --piecewise-cuda-graph-tokens 8192
    SEAM_MOE_GROUPED=$v bench "qwen3-30b-a3b SEAM_MOE_GROUPED=$v" "$q" "extend 4096" --mode extend --batch-size 1 \
      --input-len 4096 --reps 3 --cuda-graph-bs 1 --piecewise-cuda-graph-tokens 4096
  done
  bench mixtral-8x7b "$x" "decode 1" --batch-size 1 --input-len 128 --output-len 64 --cuda-graph-bs 1 \
    --piecewise-cuda-graph-tokens 128
fi

if step ab; then
  q="$DUMMY/qwen3-30b-a3b" x="$DUMMY/mixtral-8x7b"
  all_off="SEAM_MOE_GATHER_STREAM=0 SEAM_MOE_ROUTE_WARP=0 SEAM_MOE_SKINNY=0 SEAM_MOE_GROUPED_PIPELINE=0 SEAM_MOE_GROUPED_WGMMA=0"
  IFS=';' read -ra variants <<< "${MOE_VARIANTS:--;SEAM_MOE_SKINNY_MMA=1;SEAM_MOE_GROUPED_WGMMA=0;SEAM_MOE_SKINNY_MMA=0;$all_off}"
  for v in "${variants[@]}"; do
    log "ab [$v] $(date -u +%T)"
    (
      if [ "$v" != "-" ]; then for a in $v; do export "${a?}"; done; fi
      case " $AB_CASES " in *" extend "*)
      bench "qwen3-30b-a3b [$v]" "$q" "extend 4096" --mode extend --batch-size 1 --input-len 4096 --reps 3 \
        --cuda-graph-bs 1 --piecewise-cuda-graph-tokens 4096 ;; esac
      case " $AB_CASES " in *" b1 "*)
      bench "qwen3-30b-a3b [$v]" "$q" "decode 1" --batch-size 1 --input-len 128 --output-len 64 --cuda-graph-bs 1 \
        --piecewise-cuda-graph-tokens 128 ;; esac
      case " $AB_CASES " in *" b64 "*)
      bench "qwen3-30b-a3b [$v]" "$q" "decode 64" --batch-size 64 --input-len 128 --output-len 64 --cuda-graph-bs 64 \
        --piecewise-cuda-graph-tokens 8192 ;; esac
      case " $AB_CASES " in *" mixtral "*)
      bench "mixtral-8x7b [$v]" "$x" "decode 1" --batch-size 1 --input-len 128 --output-len 64 --cuda-graph-bs 1 \
        --piecewise-cuda-graph-tokens 128 ;; esac
    )
  done
fi

serve() {  # mixed (0/1): one server, then 1 client and 64 clients against it
  local mixed=$1 q="$DUMMY/qwen3-30b-a3b"
  local flags=()
  [ "$mixed" = 1 ] && flags=(--enable-mixed-chunk)
  "$BUILD/seam" serve --model-path "$q" --load-format dummy --device cuda --dtype bfloat16 --port "$PORT" \
    --max-running-requests 256 --context-length 4096 --disable-radix-cache "${flags[@]}" \
    > "$OUT/serve_mixed${mixed}.log" 2>&1 &
  local pid=$!
  wait_healthy "$PORT" $pid 180
  for clients in 1 64; do
    local prompts=${SERVE_PROMPTS_1:-6}
    [ "$clients" = 64 ] && prompts=${SERVE_PROMPTS_64:-128}
    log "serving qwen3-30b-a3b (dummy), $clients clients, $prompts prompts, mixed chunk $mixed $(date -u +%T)"
    timeout 200 "$BUILD/seam" bench-serving --port "$PORT" --model-path "$q" --num-prompts "$prompts" \
      --random-input-len 1024 --random-output-len 256 --random-range-ratio 1 --max-concurrency "$clients" 2>&1 \
      | tee -a "$OUT/serving.log" \
      | grep -E "^(Successful requests|Output token throughput|Total token throughput|Median TTFT|Median TPOT|Median ITL)" \
      | tr -s ' ' | paste -sd ';' | tee -a "$OUT/summary.txt"
    # Cumulative since start-up: the 64-client lines include the 1-client run's steps.
    curl -s "localhost:$PORT/metrics" \
      | grep -E "^seam_(steps_by_path_total|captures_after_seal_total|eager_steps_by_reason_total)" \
      | tee -a "$OUT/summary.txt"
  done
  kill "$pid"; wait "$pid" 2>/dev/null
}

if step serve; then
  q="$DUMMY/qwen3-30b-a3b"
  echo "   floors (decode steps at context 1,152): 1 client $(floor "$q" decode 1 1152); 64 clients $(floor "$q" decode 64 1152)" \
    | tee -a "$OUT/summary.txt"
  for mixed in 0 1; do serve $mixed; done
fi
log "done $(date -u +%T)"
