#!/usr/bin/env bash
# Where GPU time goes in seam's decode, extend and mixed steps, in one device call.
#
#   OUT=$OUT bash scripts/gpu_profile.sh            (device machine, repo root, carry .carry)
#
# Builds build-gpu/seam (incrementally), makes random-weight models, then traces each case's
# kernels. Tracing is a CUPTI activity tracer injected with CUDA_INJECTION64_PATH (its C++
# source is below; built here with g++): the device image has no working Nsight Systems
# (nsys is off the PATH, and the copy under nsight-compute cannot make reports). It sees
# every kernel, also those replayed inside CUDA graphs, plus memcpy/memset and the host's
# runtime calls. If an nsys is found, case (a) is also profiled with it as a cross-check.
#
# Steps are cut at cudaStreamSynchronize (ModelRunner::sample ends every step with one),
# so a step = the GPU work between two synchronizes. Per case the script prints the
# per-step kernel table (calls/step, avg us, us/step), kernel-time sum vs GPU span vs the
# bench's latency, the mean idle gap between consecutive kernels, and one step's trace.
# Only text stays in $OUT (at most 8 files come back).
#   env: CASES="a b c d e f g h i j k m n o p" (subset; i / j / k = gemma-3-4b / phi-3.5-mini / gemma-2-9b decode batch 1;
#        m / n / o = Qwen3-30B-A3B decode batch 1 / decode batch 64 / prefill 4,096; p = Mixtral-8x7B decode batch 1
#        (m-p: config-only folders, --load-format dummy; DUMMY_ONLY=1 runs every case that way); f = 8B prefill of 4,096 tokens; q = 8B decode batch 64; g / h = Qwen2.5-0.5B extend
#        of 16 tokens on piecewise graphs / eager), MODELS=/tmp/seam_models, BUILD=build-gpu, BUDGET_S=380,
#        EXTRA_ARGS="..." (appended to every case's seam command, e.g. "--gemm-autotune")
set -uo pipefail
OUT=${OUT:-/tmp/seam_profile_out}
mkdir -p "$OUT"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD=${BUILD:-build-gpu}
case $BUILD in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac  # relative to the repository root
MODELS=${MODELS:-/tmp/seam_models}
CASES=${CASES:-"d e c b a"}
BUDGET_S=${BUDGET_S:-380}  # stop starting new cases after this many seconds
WORK=/tmp/seam_profile_work
mkdir -p "$WORK"
T0=$(date +%s)
export PATH="/usr/local/cuda/bin:$PATH"
export LD_LIBRARY_PATH="$ROOT/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
LOG="$OUT/profile_log.txt"
log() { echo "== [$(($(date +%s) - T0)) s] $*" | tee -a "$LOG"; }

log "commit $(git rev-parse --short HEAD 2>/dev/null) dirty files: $(git status --porcelain 2>/dev/null | wc -l)"
git status --porcelain 2>/dev/null >> "$LOG"

# ---------------------------------------------------------------- build
# Always (re)build: ninja is incremental, and a warm machine's build-gpu may predate the tree.
if true; then
  log "build seam"
  rm -f "$BUILD/seam"
  SEAM_GPU_BUILD="$BUILD" SEAM_GPU_TARGETS=seam OUT="$WORK/build" \
    bash scripts/gpu_suite.sh configure build > "$WORK/build_steps.log" 2>&1
  tail -4 "$WORK/build_steps.log" | tee -a "$LOG"
  if [ ! -x "$BUILD/seam" ]; then
    # Others' half-written edits travel with the working tree: fall back to the commit.
    grep -E "error|FAILED" "$WORK/build/build.log" | head -20 >> "$LOG"
    log "working-tree build failed; building the commit $(git rev-parse --short HEAD 2>/dev/null) instead"
    HEAD_TREE=/tmp/seam_head
    rm -rf "$HEAD_TREE" && mkdir -p "$HEAD_TREE" && git archive HEAD | tar -x -C "$HEAD_TREE" \
      && ln -sfn "$ROOT/.carry" "$HEAD_TREE/.carry" || { log "git archive failed"; exit 1; }
    BUILD="$HEAD_TREE/build-gpu"
    SEAM_GPU_BUILD="$BUILD" SEAM_GPU_TARGETS=seam OUT="$WORK/build_head" \
      bash "$HEAD_TREE/scripts/gpu_suite.sh" configure build > "$WORK/build_head.log" 2>&1
    tail -4 "$WORK/build_head.log" | tee -a "$LOG"
    [ -x "$BUILD/seam" ] || { tail -30 "$WORK/build_head/build.log" >> "$LOG"; log "build failed"; exit 1; }
    log "PROFILING THE COMMIT, not the working tree"
  fi
fi

# ---------------------------------------------------------------- models
missing=()
# only the models the chosen cases use (a g h: qwen2.5-0.5b; b: llama-3.2-1b; c-f: llama-3.1-8b;
# i: gemma-3-4b; j: phi-3.5-mini; k: gemma-2-9b)
need=""
for c in $CASES; do
  case $c in a|g|h) need="$need qwen2.5-0.5b" ;; b) need="$need llama-3.2-1b" ;; c|d|e|f|q) need="$need llama-3.1-8b" ;;
    i) need="$need gemma-3-4b" ;; j) need="$need phi-3.5-mini" ;; k) need="$need gemma-2-9b" ;;
    m|n|o) dummy="${dummy:-} qwen3-30b-a3b" ;; p) dummy="${dummy:-} mixtral-8x7b" ;; esac
done
# The MoE shapes are too large for the disk: config only, weights filled on the GPU (--load-format dummy).
# DUMMY_ONLY=1: every case's model that way (on a fresh machine no folder exists yet).
[ -n "${DUMMY_ONLY:-}" ] && dummy="${dummy:-} $need"
for m in $(echo ${dummy:-} | tr ' ' '\n' | sort -u); do
  [ -f "$MODELS/$m/config.json" ] || python3 tools/make_random_models.py "$MODELS" --only "$m" --config-only 2>&1 \
    | grep -E "written|Error|error" | tee -a "$LOG"
done
for m in $(echo $need | tr ' ' '\n' | sort -u); do
  [ -f "$MODELS/$m/config.json" ] && ls "$MODELS/$m"/*.safetensors > /dev/null 2>&1 || missing+=("$m")
done
if [ ${#missing[@]} -gt 0 ] && [ -z "${DUMMY_ONLY:-}" ]; then  # DUMMY_ONLY=1: config-only folders, --load-format dummy
  log "make models: ${missing[*]}"
  python3 tools/make_random_models.py "$MODELS" --only "$(IFS=,; echo "${missing[*]}")" --no-reference 2>&1 \
    | grep -E "written|Error|error" | tee -a "$LOG"
fi

# ---------------------------------------------------------------- tools
log "profilers"
NSYS=""
for c in /usr/local/cuda/bin/nsys "$(command -v nsys 2>/dev/null)" /opt/nvidia/nsight-systems/*/bin/nsys \
         /usr/local/cuda/nsight-systems*/bin/nsys; do
  [ -n "$c" ] && [ -x "$c" ] && { NSYS=$c; break; }
done
NCU=$(command -v ncu 2>/dev/null || ls /usr/local/cuda/bin/ncu 2>/dev/null || true)
echo "nsys: ${NSYS:-none}  ncu: ${NCU:-none}" | tee -a "$LOG"
[ -n "$NCU" ] && "$NCU" --version 2>&1 | tail -1 >> "$LOG"

CUPTI_INC="" CUPTI_LIB=""
for d in /usr/local/cuda/extras/CUPTI /usr/local/cuda /usr/local/cuda/targets/x86_64-linux; do
  [ -z "$CUPTI_INC" ] && [ -f "$d/include/cupti.h" ] && CUPTI_INC="$d/include"
  [ -z "$CUPTI_LIB" ] && [ -f "$d/lib64/libcupti.so" ] && CUPTI_LIB="$d/lib64"
  [ -z "$CUPTI_LIB" ] && [ -f "$d/lib/libcupti.so" ] && CUPTI_LIB="$d/lib"
done
echo "cupti include: ${CUPTI_INC:-none}  lib: ${CUPTI_LIB:-none}" | tee -a "$LOG"

cat > "$WORK/tracer.cpp" << 'EOF'
// CUPTI activity tracer loaded by the CUDA driver (CUDA_INJECTION64_PATH).
// Writes SEAM_TRACE_FILE at exit: one line per GPU activity and per runtime call.
//   K|M|S,start_ns,end_ns,correlation,graph_id,graph_node,grid,block,name
//   A,start_ns,end_ns,correlation,0,0,,,runtime_call_name
#include <cupti.h>
#include <cxxabi.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace {
std::mutex mu;
std::vector<std::string> lines;
constexpr size_t kBuf = 8u << 20;

std::string demangle(const char* n) {
  if (!n) return "?";
  int st = 0;
  char* d = abi::__cxa_demangle(n, nullptr, nullptr, &st);
  std::string s = (st == 0 && d) ? d : n;
  free(d);
  for (auto& c : s) if (c == '\n' || c == ',') c = ';';
  return s;
}

void CUPTIAPI on_request(uint8_t** buf, size_t* size, size_t* max_records) {
  *buf = static_cast<uint8_t*>(aligned_alloc(8, kBuf));
  *size = kBuf;
  *max_records = 0;
}

void CUPTIAPI on_complete(CUcontext, uint32_t, uint8_t* buf, size_t, size_t valid) {
  CUpti_Activity* r = nullptr;
  std::vector<std::string> out;
  char line[512];
  while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS) {
    if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || r->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(r);
      snprintf(line, sizeof line, "K,%llu,%llu,%u,%u,%llu,%dx%dx%d,%dx%dx%d,", (unsigned long long)k->start,
               (unsigned long long)k->end, k->correlationId, k->graphId, (unsigned long long)k->graphNodeId,
               k->gridX, k->gridY, k->gridZ, k->blockX, k->blockY, k->blockZ);
      out.push_back(line + demangle(k->name));
    } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      auto* m = reinterpret_cast<CUpti_ActivityMemcpy6*>(r);
      snprintf(line, sizeof line, "M,%llu,%llu,%u,%u,%llu,,,[memcpy %s %llu B]", (unsigned long long)m->start,
               (unsigned long long)m->end, m->correlationId, m->graphId, (unsigned long long)m->graphNodeId,
               m->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD   ? "HtoD"
               : m->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH ? "DtoH"
               : m->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOD ? "DtoD"
                                                                : "other",
               (unsigned long long)m->bytes);
      out.push_back(line);
    } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      auto* m = reinterpret_cast<CUpti_ActivityMemset4*>(r);
      snprintf(line, sizeof line, "S,%llu,%llu,%u,%u,%llu,,,[memset %llu B]", (unsigned long long)m->start,
               (unsigned long long)m->end, m->correlationId, m->graphId, (unsigned long long)m->graphNodeId,
               (unsigned long long)m->bytes);
      out.push_back(line);
    } else if (r->kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
      auto* a = reinterpret_cast<CUpti_ActivityAPI*>(r);
      const char* name = "?";
      cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, a->cbid, &name);
      snprintf(line, sizeof line, "A,%llu,%llu,%u,0,0,,,%s", (unsigned long long)a->start,
               (unsigned long long)a->end, a->correlationId, name ? name : "?");
      out.push_back(line);
    }
  }
  free(buf);
  std::lock_guard<std::mutex> g(mu);
  lines.insert(lines.end(), out.begin(), out.end());
}

void at_exit() {
  cuptiActivityFlushAll(1);
  const char* path = getenv("SEAM_TRACE_FILE");
  FILE* f = fopen(path ? path : "/tmp/seam_trace.csv", "w");
  if (!f) return;
  std::lock_guard<std::mutex> g(mu);
  for (auto& l : lines) fprintf(f, "%s\n", l.c_str());
  fclose(f);
}
}  // namespace

extern "C" int InitializeInjection() {
  if (cuptiActivityRegisterCallbacks(on_request, on_complete) != CUPTI_SUCCESS) return 0;
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME);
  cuptiActivityFlushPeriod(500);  // records keep arriving even if the exit-time flush finds CUDA gone
  atexit(at_exit);
  return 1;
}
EOF
TRACER=""
if [ -n "$CUPTI_INC" ] && [ -n "$CUPTI_LIB" ]; then
  g++ -O2 -shared -fPIC -std=c++17 -I"$CUPTI_INC" -I/usr/local/cuda/include "$WORK/tracer.cpp" \
    -L"$CUPTI_LIB" -Wl,-rpath,"$CUPTI_LIB" -lcupti -o "$WORK/libseam_tracer.so" >> "$LOG" 2>&1 \
    && TRACER="$WORK/libseam_tracer.so"
fi
echo "tracer: ${TRACER:-FAILED to build}" | tee -a "$LOG"

cat > "$WORK/analyze.py" << 'EOF'
"""Per-step kernel tables from a tracer CSV. argv: trace, label, selector, bench_json_line.
selector: 'last:N' (the last N non-empty steps) or 'alt:N' (the last 2N steps, alternating
A=even, B=odd: the mixed bench runs a mixed step then the chunk alone)."""
import bisect, collections, json, re, sys

trace, label, selector, bench = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
acts, syncs = [], []
for line in open(trace):
    p = line.rstrip("\n").split(",", 8)
    if len(p) < 9:
        continue
    kind, s, e = p[0], int(p[1]), int(p[2])
    if kind == "A":
        if "Synchronize" in p[8] or p[8].startswith("cudaMemcpy_"):
            syncs.append(e)
    else:
        acts.append((s, e, kind, p[8], p[6], p[4]))
acts.sort()
syncs.sort()


def short(n):
    if n.startswith("["):
        return re.sub(r" \d+ B\]", "]", n)
    n = n.replace("(anonymous namespace)::", "")
    depth, cut = 0, len(n)
    for i, c in enumerate(n):  # drop the argument list
        if c == "<": depth += 1
        elif c == ">": depth -= 1
        elif c == "(" and depth == 0:
            cut = i
            break
    n = n[:cut]
    n = re.sub(r"^void ", "", n)
    n = re.sub(r"\b[a-z_]+::", "", n)
    n = n.replace("__nv_bfloat16", "bf16")
    return n[:90]


steps = collections.defaultdict(list)  # index of the sync that ends it -> activities
for a in acts:
    steps[bisect.bisect_left(syncs, a[1])].append(a)
order = [steps[k] for k in sorted(steps) if steps[k]]
kind, n = selector.split(":")
n = int(n)
groups = {}
if kind == "last":
    groups[label] = order[-n:]
else:
    tail = order[-2 * n:]
    groups[label + " (mixed step)"] = tail[0::2]
    groups[label + " (chunk alone)"] = tail[1::2]

try:
    bj = json.loads(bench)
    lat = {k: round(v * 1e3, 3) for k, v in bj.items() if k.endswith("latency_s")}
except Exception:
    lat = {"bench": "no json"}

print(f"# {label}: {len(order)} non-empty steps in the trace; bench latency (ms) under the tracer: {lat}")
print("# all steps (kernels, GPU span us): " + " ".join(f"{len(s)}/{(s[-1][1]-s[0][0])/1e3:.0f}" for s in order[-40:]))
per_group = {}
for g, sel in groups.items():
    ns = len(sel)
    if ns == 0:
        print(f"## {g}: no steps")
        continue
    agg = collections.defaultdict(lambda: [0, 0.0, set()])
    busy = span = gaps = 0.0
    n_gaps = 0
    n_k = 0
    for st in sel:
        busy_s = 0.0
        for i, (s, e, k, name, grid, gid) in enumerate(st):
            a = agg[short(name)]
            a[0] += 1
            a[1] += (e - s) / 1e3
            a[2].add(grid)
            busy_s += (e - s) / 1e3
            if i:
                gaps += (s - st[i - 1][1]) / 1e3
                n_gaps += 1
        busy += busy_s
        span += (st[-1][1] - st[0][0]) / 1e3
        n_k += len(st)
    print(f"\n## {g}: {ns} steps, {n_k/ns:.1f} GPU activities/step, kernel+copy time {busy/ns:.1f} us/step, "
          f"GPU span (first start..last end) {span/ns:.1f} us/step, idle {(span-busy)/ns:.1f} us/step, "
          f"mean gap between consecutive activities {gaps/max(n_gaps,1):.2f} us")
    print(f"{'kernel':90s} {'calls/step':>10s} {'avg us':>9s} {'us/step':>9s} {'%':>5s}  grids")
    rows = sorted(agg.items(), key=lambda kv: -kv[1][1])
    per_group[g] = {k: v[1] / ns for k, v in rows}
    for k, (c, t, grids) in rows:
        gs = ",".join(sorted(grids))[:40]
        print(f"{k:90s} {c/ns:10.2f} {t/c:9.2f} {t/ns:9.1f} {100*t/busy:5.1f}  {gs}")

if len(per_group) == 2:
    (ga, a), (gb, b) = per_group.items()
    print(f"\n## difference per step: {ga} minus {gb} (us), largest first")
    diff = sorted(((a.get(k, 0) - b.get(k, 0), k) for k in set(a) | set(b)), reverse=True)
    for d, k in diff:
        if abs(d) >= 1.0:
            print(f"{k:90s} {d:+9.1f}  ({a.get(k,0):.1f} vs {b.get(k,0):.1f})")
    print(f"{'TOTAL':90s} {sum(a.values())-sum(b.values()):+9.1f}")

# one representative step's trace (the median-span step of the first group)
g0, sel0 = next(iter(groups.items()))
if sel0:
    st = sorted(sel0, key=lambda s: s[-1][1] - s[0][0])[len(sel0) // 2]
    with open(sys.argv[5], "a") as f:
        f.write(f"\n# {g0}: trace of the median step ({len(st)} activities)\n")
        f.write(f"{'t_us':>9s} {'dur_us':>8s} {'gap_us':>7s}  name [grid block? graph]\n")
        t0 = st[0][0]
        for i, (s, e, k, name, grid, gid) in enumerate(st):
            gap = (s - st[i - 1][1]) / 1e3 if i else 0.0
            f.write(f"{(s-t0)/1e3:9.1f} {(e-s)/1e3:8.2f} {gap:7.2f}  {short(name)} [{grid} g{gid}]\n")
EOF

SUMMARY="$OUT/profile_summary.txt"
TRACES="$OUT/profile_step_traces.txt"
BENCHLOG="$OUT/profile_bench.txt"
: > "$SUMMARY"; : > "$TRACES"
run_case() {  # name model selector args...
  local name=$1 model=$2 sel=$3; shift 3
  if [ $(($(date +%s) - T0)) -gt "$BUDGET_S" ]; then log "skip $name: past the ${BUDGET_S} s budget"; return; fi
  # shellcheck disable=SC2086  # EXTRA_ARGS splits into words on purpose
  local load=()
  ls "$MODELS/$model"/*.safetensors > /dev/null 2>&1 || load=(--load-format dummy)  # a config-only folder
  local cmd=("$BUILD/seam" bench-one-batch --device cuda --dtype bfloat16 --model-path "$MODELS/$model" "${load[@]}" "$@" ${EXTRA_ARGS:-})
  log "case $name: $model $*"
  # plain run first: the step latency without any tracer
  local plain
  plain=$(timeout 90 "${cmd[@]}" 2>>"$BENCHLOG" | tee -a "$BENCHLOG" | tail -1)
  echo "$name plain: $plain" >> "$BENCHLOG"
  if [ -n "$TRACER" ]; then
    local traced
    traced=$(CUDA_INJECTION64_PATH="$TRACER" SEAM_TRACE_FILE="$WORK/$name.csv" timeout 120 "${cmd[@]}" \
      2>>"$BENCHLOG" | tee -a "$BENCHLOG" | tail -1)
    echo "$name traced: $traced" >> "$BENCHLOG"
    {
      echo; echo "################ case $name: $model $*"
      echo "# bench JSON without tracer: $plain"
      python3 "$WORK/analyze.py" "$WORK/$name.csv" "$name" "$sel" "$traced" "$TRACES" 2>&1
    } >> "$SUMMARY"
    ls -la "$WORK/$name.csv" >> "$LOG" 2>&1
    rm -f "$WORK/$name.csv"
  fi
}

for c in $CASES; do
  case $c in
    a) run_case a_qwen05b_decode qwen2.5-0.5b last:31 --batch-size 1 --input-len 128 --output-len 32 ;;
    b) run_case b_llama1b_decode llama-3.2-1b last:31 --batch-size 1 --input-len 128 --output-len 32 ;;
    c) run_case c_llama8b_decode llama-3.1-8b last:31 --batch-size 1 --input-len 128 --output-len 32 ;;
    d) run_case d_llama8b_mixed llama-3.1-8b alt:5 --mode mixed --batch-size 64 --input-len 512 --reps 5 ;;
    e) run_case e_llama8b_extend llama-3.1-8b last:5 --mode extend --batch-size 1 --input-len 512 --reps 5 ;;
    f) run_case f_llama8b_prefill4k llama-3.1-8b last:3 --mode extend --batch-size 1 --input-len 4096 --reps 3 ;;
    q) run_case q_llama8b_decode64 llama-3.1-8b last:7 --batch-size 64 --input-len 128 --output-len 8 \
         --cuda-graph-bs 64 ;;
    g) run_case g_qwen05b_extend16_piecewise qwen2.5-0.5b last:5 --mode extend --batch-size 1 --input-len 16 \
         --piecewise-cuda-graph-tokens 16 --reps 10 ;;
    i) run_case i_gemma3_4b_decode gemma-3-4b last:31 --batch-size 1 --input-len 128 --output-len 32 ;;
    j) run_case j_phi35_mini_decode phi-3.5-mini last:31 --batch-size 1 --input-len 128 --output-len 32 ;;
    k) run_case k_gemma2_9b_decode gemma-2-9b last:31 --batch-size 1 --input-len 128 --output-len 32 ;;
    m) run_case m_qwen3_30b_a3b_decode qwen3-30b-a3b last:15 --batch-size 1 --input-len 128 --output-len 16 \
         --cuda-graph-bs 1 --piecewise-cuda-graph-tokens 128 ;;
    n) run_case n_qwen3_30b_a3b_decode64 qwen3-30b-a3b last:7 --batch-size 64 --input-len 128 --output-len 8 \
         --cuda-graph-bs 64 --piecewise-cuda-graph-tokens 8192 ;;
    o) run_case o_qwen3_30b_a3b_prefill4k qwen3-30b-a3b last:2 --mode extend --batch-size 1 --input-len 4096 --reps 2 \
         --cuda-graph-bs 1 --piecewise-cuda-graph-tokens 4096 ;;
    p) run_case p_mixtral_8x7b_decode mixtral-8x7b last:15 --batch-size 1 --input-len 128 --output-len 16 \
         --cuda-graph-bs 1 --piecewise-cuda-graph-tokens 128 ;;
    h) run_case h_qwen05b_extend16_eager qwen2.5-0.5b last:5 --mode extend --batch-size 1 --input-len 16 \
         --disable-piecewise-cuda-graph --reps 10 ;;
  esac
done

# ---------------------------------------------------------------- nsys cross-check (case a only)
if [ -n "$NSYS" ] && [ $(($(date +%s) - T0)) -lt "$BUDGET_S" ]; then
  log "nsys cross-check on case a"
  NS="$OUT/nsys_a.txt"
  timeout 120 "$NSYS" profile -o "$WORK/nsys_a" --force-overwrite true --cuda-graph-trace=node \
    "$BUILD/seam" bench-one-batch --device cuda --dtype bfloat16 --model-path "$MODELS/qwen2.5-0.5b" \
    --batch-size 1 --input-len 128 --output-len 32 > "$NS" 2>&1
  timeout 90 "$NSYS" stats --report cuda_gpu_kern_sum --format csv "$WORK/nsys_a.nsys-rep" >> "$NS" 2>&1
  rm -f "$WORK"/nsys_a.nsys-rep "$WORK"/nsys_a.sqlite "$WORK"/nsys_a.qdstrm
fi
log "done"
ls -la "$OUT" >> "$LOG"
