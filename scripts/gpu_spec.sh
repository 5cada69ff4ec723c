#!/usr/bin/env bash
# Issue 27's GPU figures (speculative decoding) on random bf16 weights, in one device call:
#   build     seam from this tree into $BUILD (scripts/gpu_suite.sh configure build), overlapped
#             with `make`
#   make      the llama-3.1-8b and llama-3.2-1b shapes (tools/make_random_models.py --no-reference;
#             the same 128,256-token vocabulary, so the 1B can draft for the 8B)
#   verify    the verify step against a plain decode step on the 8B shape at context $INPUT_LEN:
#             k = 1..8 at batch 1 (the cost table; decode = one weight read, the floor) and the
#             batch sweep 1..64 (where the off-switch engages), one engine start
#             (bench-one-batch --mode verify --verify-batch-sizes ... --verify-draft-tokens ...)
#   generate  end to end at batch 1 ($GEN_IN in / $GEN_OUT out, greedy, EOS ignored): no
#             speculation, NGRAM, NGRAM's worst case (k random drafts per row, almost never
#             accepted: bench-one-batch --worst-case-drafts) and STANDALONE (the 1B drafting);
#             output tok/s and the accept length actually seen (bench-one-batch --mode generate)
#   mixed     a 512-token chunk with 8 verify rows of k + 1 tokens riding beside it (piecewise
#             graphs), against the same chunk with 8 plain decode rows
#   summary   the tables: speed-up for accept length a = (1+a)·t_decode / t_verify(k); the
#             break-even accept length per batch size; the off-switch batch size for the accept
#             length measured; the worst case against the verify-step cost
#   delete    removes the models
#
#   device:  bash scripts/gpu_spec.sh                 (carry [".carry"]: PCRE2 for the build)
#            STEPS="verify generate summary" BUILD=/path/to/build-gpu bash scripts/gpu_spec.sh
# Results: $OUT/summary.txt (the figures), $OUT/bench.jsonl (every JSON line, tagged),
# $OUT/stderr.log, $OUT/build/ (the build's logs). Every step is bounded by `timeout`.
# Budget on an H200 (8B decode step ~4 ms): make ~60 s, verify ~40 s, generate 4 x ~15 s,
# mixed 2 x ~10 s, plus the build when asked for (overlapped with make).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT=${OUT:-/tmp/seam_out}
MODELS=${MODELS:-/tmp/seam_models}
BUILD=${BUILD:-$ROOT/build-gpu}
STEPS=" ${STEPS:-build make verify generate mixed summary} "
INPUT_LEN=${INPUT_LEN:-1024}   # verify-step context
REPS=${REPS:-10}
SWEEP_B=${SWEEP_B:-1,2,4,8,16,32,64}
SWEEP_K=${SWEEP_K:-1,2,3,4,5,6,7,8}
GEN_K=${GEN_K:-4}              # draft tokens end to end (and the k the off-switch line uses)
GEN_IN=${GEN_IN:-128}
GEN_OUT=${GEN_OUT:-512}
TARGET=llama-3.1-8b
DRAFT=llama-3.2-1b
# DEVICE=cpu DTYPE=float32 with $MODELS/{llama-3.1-8b,llama-3.2-1b} linked to stories260K and
# STEPS without build/make: a dry run of the script's logic on a machine without a GPU.
DEVICE=${DEVICE:-cuda}
DTYPE=${DTYPE:-bfloat16}
step() { [[ "$STEPS" == *" $1 "* ]]; }
mkdir -p "$OUT" "$MODELS"
export PATH="/usr/local/cuda/bin:$PATH"
export LD_LIBRARY_PATH="$ROOT/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }
# bench TAG LIMIT_S args...: one bench-one-batch run; its JSON lines go to bench.jsonl as "TAG | {...}".
bench() {
  local tag=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout "$limit" "$BUILD/seam" bench-one-batch --device "$DEVICE" --dtype "$DTYPE" --log-level warning "$@" \
    2>>"$OUT/stderr.log" | grep '^{' | sed "s/^/$tag | /" >> "$OUT/bench.jsonl"
  local rc=${PIPESTATUS[0]}
  log "$tag rc=$rc $((SECONDS - t0)) s"
  [ "$rc" -eq 0 ] || tail -3 "$OUT/stderr.log" | tee -a "$OUT/summary.txt"
}

if step build; then
  (SEAM_GPU_BUILD="$BUILD" SEAM_GPU_TARGETS=seam OUT="$OUT/build" \
     timeout 480 bash "$ROOT/scripts/gpu_suite.sh" configure build > "$OUT/build.log" 2>&1; echo $? > "$OUT/build.rc") &
  build_pid=$!
fi
if step make; then
  t0=$SECONDS
  for m in $TARGET $DRAFT; do
    [ -f "$MODELS/$m/config.json" ] || todo="${todo:+$todo,}$m"
  done
  if [ -n "${todo:-}" ]; then
    timeout 300 python3 "$ROOT/tools/make_random_models.py" "$MODELS" --only "$todo" --no-reference 2>&1 \
      | grep -v -i warn | tail -3 >> "$OUT/stderr.log"
  fi
  log "models $TARGET $DRAFT ready=$([ -f "$MODELS/$TARGET/config.json" ] && [ -f "$MODELS/$DRAFT/config.json" ] && echo yes || echo NO) $((SECONDS - t0)) s"
fi
if step build; then
  wait "$build_pid"
  log "build rc=$(cat "$OUT/build.rc") ($BUILD)"
  rm -f "$OUT/build.rc"
  mv "$OUT/build.log" "$OUT/build/" 2>/dev/null
fi
[ -x "$BUILD/seam" ] || { log "no $BUILD/seam: build it (STEPS=build) or set BUILD"; exit 1; }

M8="$MODELS/$TARGET"
# Generation and the verify sweep start with small piecewise keys: their prompts are short, and
# the default 8,192-token keys would only lengthen start-up.
SMALL_KEYS=(--chunked-prefill-size 1024 --piecewise-cuda-graph-max-tokens 1024)
if step verify; then
  bench verify 240 --model-path "$M8" --mode verify --verify-batch-sizes "$SWEEP_B" --verify-draft-tokens "$SWEEP_K" \
    --input-len "$INPUT_LEN" --reps "$REPS"
fi
if step generate; then
  gen=(--model-path "$M8" --mode generate --batch-size 1 --input-len "$GEN_IN" --output-len "$GEN_OUT" "${SMALL_KEYS[@]}")
  bench gen_none 120 "${gen[@]}"
  bench gen_ngram 120 "${gen[@]}" --speculative-algorithm NGRAM --speculative-num-draft-tokens "$GEN_K"
  bench gen_ngram_worst 120 "${gen[@]}" --speculative-algorithm NGRAM --speculative-num-draft-tokens "$GEN_K" \
    --worst-case-drafts
  bench gen_standalone 150 "${gen[@]}" --speculative-algorithm STANDALONE --speculative-num-draft-tokens "$GEN_K" \
    --speculative-draft-model-path "$MODELS/$DRAFT"
fi
if step mixed; then
  bench mixed_decode 120 --model-path "$M8" --mode mixed --batch-size 8 --input-len 512 --reps "$REPS"
  bench mixed_verify 120 --model-path "$M8" --mode mixed --batch-size 8 --input-len 512 --reps "$REPS" \
    --speculative-num-draft-tokens "$GEN_K"
fi
if step summary; then
  GEN_K=$GEN_K python3 - "$OUT/bench.jsonl" <<'PY' 2>&1 | tee -a "$OUT/summary.txt"
import json, os, sys
rows = {}
for line in open(sys.argv[1]):
    tag, _, js = line.partition(" | ")
    rows.setdefault(tag.strip(), []).append(json.loads(js))
k_gen = int(os.environ["GEN_K"])
pts = [r["verify_point"] for r in rows.get("verify", []) if "verify_point" in r]
by = {(p["batch_size"], p["draft_tokens"]): p for p in pts}
if pts:
    print("-- verify step vs decode step, batch 1, context %d (ms; decode = one weight read)" % pts[0]["input_len"])
    print("k  rows key  t_verify  t_decode  ratio  speed-up for accept length a = (1+a)*t_decode/t_verify(k), a=0..k")
    for (b, k), p in sorted(by.items()):
        if b != 1: continue
        td, tv = p["decode_median_latency_s"], p["verify_median_latency_s"]
        ups = " ".join("%.2f" % ((1 + a) * td / tv) for a in range(k + 1))
        print("%d  %3d %3d  %8.3f  %8.3f  %5.3f  %s  (%s)" % (k, p["verify_rows"], p["verify_graph_key"], 1e3 * tv,
                                                             1e3 * td, tv / td, ups, p["verify_path"]))
    print("-- break-even accept length t_verify/t_decode - 1, by batch size (rows) and k")
    ks = sorted({k for _, k in by})
    print("B    " + " ".join("k=%-5d" % k for k in ks) + "  t_decode ms")
    for b in sorted({b for b, _ in by}):
        print("%-4d " % b + " ".join("%-7.3f" % by[(b, k)]["break_even_accept_length"] if (b, k) in by else "   -   "
                                      for k in ks) + "  %.3f" % (1e3 * by[(b, ks[0])]["decode_median_latency_s"]))
gen = {t[4:]: rows[t][-1] for t in rows if t.startswith("gen_") and rows[t]}
if gen:
    print("-- end to end, batch 1 (greedy, EOS ignored)")
    for name, g in gen.items():
        print("%-12s %8.1f tok/s  %.2f tokens/step  mean accept length %.3f  proposed %d accepted %d  verify steps graph/eager %d/%d"
              % (name, g["output_throughput_tok_s"], g["tokens_per_step"], g["mean_accept_length"],
                 g["speculative_proposed_tokens"], g["speculative_accepted_tokens"], g["verify_steps_decode_graph"],
                 g["verify_steps_eager"]))
    base = gen.get("none", {}).get("output_throughput_tok_s")
    if base:
        for name in ("ngram", "ngram_worst", "standalone"):
            if name in gen:
                print("%s vs none: x%.3f tok/s" % (name, gen[name]["output_throughput_tok_s"] / base))
    w = gen.get("ngram_worst")
    if base and w and (1, k_gen) in by:
        p = by[(1, k_gen)]
        print("NGRAM worst case (k=%d, nothing accepted): %.1f%% slower than no speculation; the verify step alone "
              "predicts %.1f%% (t_verify/t_decode - 1); the difference is host time (lookup, drafting, commit) and noise"
              % (k_gen, 100 * (base / w["output_throughput_tok_s"] - 1),
                 100 * (p["verify_median_latency_s"] / p["decode_median_latency_s"] - 1)))
# The off-switch: the largest batch where verifying k drafts still pays at accept length a.
if pts:
    measured = [("ngram measured", gen["ngram"]["mean_accept_length"])] if "ngram" in gen else []
    measured += [("standalone measured", gen["standalone"]["mean_accept_length"])] if "standalone" in gen else []
    for label, a in measured + [("a", 0.5), ("a", 1.0), ("a", 2.0)]:
        pays = [b for (b, k), p in sorted(by.items()) if k == k_gen and (1 + a) * p["decode_median_latency_s"] > p["verify_median_latency_s"]]
        top = max(pays) if pays else 0
        print("off-switch (k=%d, %s = %.3f): speculation pays up to batch %s -> default_speculative_max_batch_size = %s"
              % (k_gen, label, a, top if top else "none", top if top else "1 (or off)"))
mx = {t: rows[t][-1] for t in ("mixed_decode", "mixed_verify") if rows.get(t)}
if mx:
    print("-- mixed steps: one 512-token chunk + 8 rows (piecewise graphs)")
    for t, m in mx.items():
        lm, lc = m["mixed_median_latency_s"], m["chunk_alone_median_latency_s"]
        print("%-13s %d rows: %.3f ms (chunk alone %.3f ms, +%.1f%%) path %s" % (t, m["mixed_decode_rows"], 1e3 * lm, 1e3 * lc,
                                                                             100 * (lm - lc) / lc, m["mixed_path"]))
PY
fi
step delete && rm -rf "${MODELS:?}/$TARGET" "${MODELS:?}/$DRAFT"
exit 0
