#!/usr/bin/env bash
# `lockstep serve` beside redis-server 7.0 on this machine: redis-benchmark's ops/s for the
# commands locks and their suites use, unpipelined and pipelined (16), and the costs that must
# not grow with the data (serve_costs.py). Needs redis-server, redis-benchmark and redis-py.
#
#   benchmarks/serve-vs-redis.sh [path/to/lockstep]     (default: target/release/lockstep)
set -euo pipefail
cd "$(dirname "$0")/.."
lockstep=${1:-target/release/lockstep}
requests=${REQUESTS:-100000}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
rport=$(free_port); sport=$(free_port)
redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --daemonize no >/dev/null &
rpid=$!
"$lockstep" serve --masters 1 --port "$sport" --history-max-events 1000 >/dev/null 2>&1 &
spid=$!
trap 'kill $rpid $spid 2>/dev/null || true' EXIT
for port in "$rport" "$sport"; do
  for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
done
printf '| command | pipeline | redis-server ops/s | lockstep serve ops/s |\n|---|---|---|---|\n'
for pipeline in 1 16; do
  r=$(redis-benchmark -p "$rport" -q -n "$requests" -P "$pipeline" -t set,get,incr,lpush,lpop,sadd,zadd --csv)
  s=$(redis-benchmark -p "$sport" -q -n "$requests" -P "$pipeline" -t set,get,incr,lpush,lpop,sadd,zadd --csv)
  paste -d, <(echo "$r" | tail -n +2) <(echo "$s" | tail -n +2) | while IFS=, read -r name rops _ _ _ _ _ _ _ sops _; do
    printf '| %s | %s | %s | %s |\n' "${name//\"/}" "$pipeline" "${rops//\"/}" "${sops//\"/}"
  done
done
echo
echo "redis-server:"; python3 benchmarks/serve_costs.py "$rport"
echo "lockstep serve:"; python3 benchmarks/serve_costs.py "$sport"
