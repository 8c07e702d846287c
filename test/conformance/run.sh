#!/usr/bin/env bash
# The official MCP conformance suite's generic server scenarios against a real Switchboard on loopback.
# The suite needs Node 22 (npm provides it); it has no header option, so a proxy adds the bearer token.
set -euo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
export DATA_DIR="$work/data" PORT="$port" HOST=127.0.0.1 LOG_LEVEL=warn BASE_URL="http://localhost:$port"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

node bin/switchboard.js account create --email conformance@example.test --password conformance-pw >/dev/null
token=$(node bin/switchboard.js token create --email conformance@example.test --scopes universal-mcp-read,universal-mcp-read-write)
node --import tsx src/main.ts & pids+=($!)
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.2; done
node --import tsx test/conformance/proxy.ts 0 "http://127.0.0.1:$port" "$token" > "$work/proxy.port" & pids+=($!)
for _ in $(seq 1 50); do [ -s "$work/proxy.port" ] && break; sleep 0.1; done
proxy=$(head -1 "$work/proxy.port")

failed=0
for scenario in server-initialize ping tools-list dns-rebinding-protection; do
  echo "-- conformance: $scenario"
  if ! npx -y -p node@22 -p @modelcontextprotocol/conformance@0.1.16 -- conformance server \
      --url "http://localhost:$proxy/mcp" --scenario "$scenario"; then
    failed=1
  fi
done
exit $failed
