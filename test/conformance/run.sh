#!/usr/bin/env bash
# The official MCP conformance suite against a real Switchboard on loopback: the server scenarios of protocol
# 2025-11-25 that apply to a server with our two tools and no resources or prompts, and the authorization-server
# scenarios (docs/mcp.md#conformance lists the others and why). The suite needs Node 22 (npm provides it); it has
# no header option, so a proxy adds the bearer token.
set -euo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
# The suite's scenarios follow one another faster than the per-account MCP rate limit allows.
export DATA_DIR="$work/data" HOST=127.0.0.1 LOG_LEVEL=warn RATE_LIMIT_MCP=100000
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

node bin/switchboard.js account create --email conformance@example.test --password conformance-pw >/dev/null
token=$(node bin/switchboard.js token create --email conformance@example.test --scopes universal-mcp-read,universal-mcp-read-write)
# A random port can be taken on a busy machine: try up to five, each until the service answers or exits.
ready=0
for attempt in 1 2 3 4 5; do
  port=$((20000 + RANDOM % 20000))
  export PORT="$port" BASE_URL="http://localhost:$port"
  node --import tsx src/main.ts & server=$!
  for _ in $(seq 1 150); do
    if curl -sf "http://127.0.0.1:$port/readyz" >/dev/null; then ready=1; break; fi
    kill -0 "$server" 2>/dev/null || break
    sleep 0.2
  done
  if [ "$ready" = 1 ]; then pids+=("$server"); break; fi
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  echo "-- conformance: the service did not start on port $port (attempt $attempt); trying another port"
done
[ "$ready" = 1 ] || { echo "-- conformance: the service never became ready"; exit 1; }
node --import tsx test/conformance/proxy.ts 0 "http://127.0.0.1:$port" "$token" > "$work/proxy.port" & pids+=($!)
for _ in $(seq 1 50); do [ -s "$work/proxy.port" ] && break; sleep 0.1; done
proxy=$(head -1 "$work/proxy.port")

suite=@modelcontextprotocol/conformance@0.2.0-alpha.12
failed=0
# One npx for every server scenario (each npx start costs seconds); the loop runs with Node 22 on its PATH.
npx -y -p node@22 -p "$suite" -- sh -c '
  failed=0
  for scenario in server-initialize ping tools-list dns-rebinding-protection server-sse-multiple-streams; do
    echo "-- conformance: $scenario"
    conformance server --spec-version 2025-11-25 --url "$1" --scenario "$scenario" || failed=1
  done
  exit $failed' sh "http://localhost:$proxy/mcp" || failed=1
echo "-- conformance: authorization-server-metadata-endpoint, authorization-code-grant"
node --import tsx test/conformance/authorization.ts "$BASE_URL" conformance@example.test conformance-pw "$suite" || failed=1
exit $failed
