#!/usr/bin/env bash
# Soak (issue 26): `seam serve` on stories260K (CPU) under mixed load for N
# minutes (default 30) -- streams, abandoned streams and requests, long
# prompts, chat with n > 1, bad and oversized bodies -- with a small KV pool
# (retraction pressure). Every minute it samples the server's RSS, threads and
# open files (/proc) and KV occupancy (/metrics) into a CSV and a markdown
# table, then checks they stay flat:
#   - RSS: the last loaded sample is within 10 % + 16 MiB of the first one
#     (minute 1, after warm-up);
#   - the engine makes progress: finished requests grow every loaded minute
#     (a scheduler that admits and retries forever shows as a flat count);
#   - after the load stops (5 s idle): threads and open files back within 2 of
#     their values before the load, no running and no waiting request, no
#     leaked KV slot (pool - free - prefix-cached = 0).
# Traffic goes only to 127.0.0.1; the server is killed on exit.
#   scripts/soak.sh 3                       # a 3-minute check
#   SEAM_BIN=build/seam SOAK_WORKERS=16 scripts/soak.sh 30
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-30}
seam=${SEAM_BIN:-build/seam}
shared=${SEAM_SHARED_DIR:-$(cd .. && pwd)/shared}
workers=${SOAK_WORKERS:-16}
out=${SOAK_DIR:-build/soak}
mkdir -p "$out"
csv="$out/soak.csv"
md="$out/soak.md"

"$seam" serve --device cpu --model-path "$shared/models/stories260K" --host 127.0.0.1 --port 0 \
  --max-total-tokens 2048 --max-running-requests 24 >"$out/serve.log" 2>&1 &
pid=$!
client=""
cleanup() {
  [[ -n "$client" ]] && kill "$client" 2>/dev/null || true
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
trap cleanup EXIT
port=""
for _ in $(seq 1 600); do
  port=$(sed -n 's/.*listening on http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$out/serve.log" 2>/dev/null | head -1 || true)
  if [[ -n "$port" ]] && curl -sf "http://127.0.0.1:$port/health" >/dev/null; then break; fi
  kill -0 "$pid" 2>/dev/null || { echo "soak: seam serve exited:"; cat "$out/serve.log"; exit 1; }
  sleep 0.1
done
[[ -n "$port" ]] || { echo "soak: no listening port"; exit 1; }

metric() { awk -v k="$1" '$1 == k {print $2}' <<<"$2"; }
sample() {  # minute label
  local m rss threads fds
  m=$(curl -sf --max-time 10 "http://127.0.0.1:$port/metrics" || true)
  rss=$(awk '/^VmRSS:/ {printf "%.1f", $2 / 1024}' "/proc/$pid/status")
  threads=$(awk '/^Threads:/ {print $2}' "/proc/$pid/status")
  fds=$(ls "/proc/$pid/fd" | wc -l)
  # awk reads the gauges whatever their notation (2048 or 2.048e+03).
  local leaked
  leaked=$(awk '$1 == "seam_kv_pool_tokens" {p = $2} $1 == "seam_kv_free_tokens" {f = $2}
                $1 == "seam_kv_cached_tokens" {c = $2} END {printf "%d", p - f - c}' <<<"$m")
  local running
  running=$(awk '$1 == "seam_num_running_reqs" {printf "%d", $2}' <<<"$m")
  local waiting finished
  waiting=$(awk '$1 == "seam_num_waiting_reqs" {printf "%d", $2}' <<<"$m")
  finished=$(awk '$1 == "seam_engine_finished_requests_total" {printf "%d", $2}' <<<"$m")
  echo "$1,$rss,$threads,$fds,$(metric seam_kv_usage_ratio "$m"),$running,$leaked,$waiting,$finished" >>"$csv"
}
echo "minute,rss_mib,threads,open_fds,kv_usage_ratio,running_requests,kv_slots_in_use_uncached,waiting_requests,finished_requests" >"$csv"
sample idle-start
python3 scripts/soak_client.py "$port" "$((minutes * 60))" "$workers" >"$out/client.json" &
client=$!
for m in $(seq 1 "$minutes"); do
  sleep 60
  kill -0 "$pid" 2>/dev/null || { echo "soak: seam serve died; log:"; tail -20 "$out/serve.log"; exit 1; }
  sample "$m"
done
wait "$client" || true
client=""
sleep 5
sample idle-end

{
  echo "| minute | RSS MiB | threads | open fds | KV usage | running | KV in use (uncached) | waiting | finished |"
  echo "|---|---|---|---|---|---|---|---|---|"
  tail -n +2 "$csv" | awk -F, '{printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9}'
} >"$md"
cat "$md"
echo "client: $(cat "$out/client.json")"

python3 - "$csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
start, end = rows[0], rows[-1]
loaded = [r for r in rows if r["minute"] not in ("idle-start", "idle-end")]
fail = []
if loaded:
    first, last = float(loaded[0]["rss_mib"]), float(loaded[-1]["rss_mib"])
    if last > first * 1.10 + 16:
        fail.append(f"RSS grew {first:.1f} -> {last:.1f} MiB under load (limit +10% +16 MiB)")
for key in ("threads", "open_fds"):
    if int(end[key]) > int(start[key]) + 2:
        fail.append(f"{key}: {start[key]} before the load, {end[key]} after it")
for a, b in zip(loaded, loaded[1:]):
    if int(b["finished_requests"] or 0) <= int(a["finished_requests"] or 0):
        fail.append(f"no request finished between minutes {a['minute']} and {b['minute']} (engine stuck)")
if int(end["waiting_requests"] or 0) != 0:
    fail.append(f"{end['waiting_requests']} requests still waiting when idle")
if float(end["running_requests"] or 0) != 0:
    fail.append(f"{end['running_requests']} requests still running when idle")
if int(end["kv_slots_in_use_uncached"]) != 0:
    fail.append(f"{end['kv_slots_in_use_uncached']} KV slots held by no request and no cache when idle")
print("soak: " + ("FLAT" if not fail else "NOT FLAT: " + "; ".join(fail)))
sys.exit(1 if fail else 0)
PY
