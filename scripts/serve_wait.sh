# Sourced by the GPU scripts that start `seam serve` in the background:
#   wait_healthy PORT PID [SECONDS]   -> 0 once /health answers 200; 1 when the server exited (not
#                                        waited for: its device time would be wasted) or SECONDS
#                                        (default 120) passed.
wait_healthy() {
  local port=$1 pid=$2 tries=$(( ${3:-120} * 2 ))
  for _ in $(seq 1 "$tries"); do
    curl -sf "localhost:$port/health" > /dev/null 2>&1 && return 0
    kill -0 "$pid" 2> /dev/null || return 1
    sleep 0.5
  done
  return 1
}
