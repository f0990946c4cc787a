#!/usr/bin/env bash
# conformance-bridge.sh URL — the MCP conformance suite's "client", made of mew: a gateway on a free
# port, `mew bridge start --mcp-url URL` (signing in as the scenario asks for the auth/* ones: the
# suite's authorisation server approves at once, so MEW_OAUTH_OPENER is curl following the redirect),
# and a caller in the space whose tools/list and tools/call go through the bridge to the scenario's
# server. The caller also answers, through the space, every elicitation the bridge asks it: it accepts
# with an empty form, and the bridge's MCP client fills in the schema's defaults (SEP-1034). It needs
# bash, curl and node (the suite runs on node).
#   conformance client --command "scripts/conformance-bridge.sh" --scenario auth/metadata-default
#   conformance client --command "scripts/conformance-bridge.sh" --scenario elicitation-sep1034-client-defaults
# The suite passes the scenario in MCP_CONFORMANCE_SCENARIO and, for some, a JSON MCP_CONFORMANCE_CONTEXT:
# client_id and client_secret for pre-registered clients, toolCalls (name, arguments) for the calls a
# scenario wants made. MEW is the mew binary (default: mew on PATH).
set -euo pipefail
url=${1:?usage: conformance-bridge.sh URL}
mew=${MEW:-mew}
scenario=${MCP_CONFORMANCE_SCENARIO:-}
dir=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$dir"
}
trap cleanup EXIT

cat >"$dir/space.yaml" <<'YAML'
space: {id: conformance}
participants:
  server:
    type: mcp-bridge
    tokens: [server-token]
    capabilities:
      - {kind: mcp/response}
      - {kind: participant/status}
      - {kind: mcp/request, payload: {method: "notifications/**"}}
      - {kind: "elicitation/*"}
  caller:
    tokens: [caller-token]
    capabilities: [{kind: "*"}]
YAML

"$mew" gateway start -p 0 --host 127.0.0.1 -s "$dir/space.yaml" >"$dir/gateway.out" 2>"$dir/gateway.log" &
pids+=($!)
addr=""
for _ in $(seq 1 100); do
	addr=$(grep -oE 'listening on [0-9.]+:[0-9]+' "$dir/gateway.out" | head -n 1 | cut -d' ' -f3) || true
	[[ -n $addr ]] && break
	sleep 0.1
done
[[ -n $addr ]] || { echo "the gateway did not start" >&2; cat "$dir/gateway.log" >&2; exit 1; }

# What the scenario gives: a pre-registered client (id and secret) for some, client credentials for
# the client-credentials ones; the others register dynamically.
# The suite's client ID metadata document URL: used where the server supports those documents.
flags=(--oauth --oauth-token-file "$dir/oauth.json" --oauth-client-metadata-url https://conformance-test.local/client-metadata.json)
ctx=${MCP_CONFORMANCE_CONTEXT:-}
json_field() { grep -oE "\"$1\":\"[^\"]*\"" <<<"$ctx" | head -n 1 | cut -d'"' -f4 || true; }
if [[ -n $ctx ]]; then
	id=$(json_field client_id)
	secret=$(json_field client_secret)
	[[ -n $id ]] && flags+=(--oauth-client-id "$id")
	if [[ -n $secret ]]; then
		export MEW_CONFORMANCE_CLIENT_SECRET=$secret
		flags+=(--oauth-client-secret-env MEW_CONFORMANCE_CLIENT_SECRET)
	fi
fi
case $scenario in
auth/client-credentials-*) flags+=(--oauth-grant client_credentials) ;;
esac

MEW_OAUTH_OPENER="curl -s -L -o /dev/null" "$mew" bridge start -g "ws://$addr" -s conformance -p server -t server-token \
	--mcp-url "$url" --init-timeout 20s --max-reconnects 0 -l debug "${flags[@]}" 2>"$dir/bridge.log" &
pids+=($!)
ready=""
for _ in $(seq 1 200); do
	if grep -q "MCP server ready" "$dir/bridge.log"; then ready=1; break; fi
	if ! kill -0 "${pids[-1]}" 2>/dev/null; then break; fi
	sleep 0.1
done
cat "$dir/bridge.log" >&2
[[ -n $ready ]] || { echo "the bridge did not become ready" >&2; exit 1; }

# The caller lists the tools through the space, then calls them (some scenarios ask for more scope on a
# call: the bridge signs in again); the answers come back through the bridge.
api="http://$addr/participants/caller/messages?space=conformance"
post() {
	curl -s -f -H "Authorization: Bearer caller-token" -H "Content-Type: application/json" -d "$1" "$api" >/dev/null
}
# answer ID waits for the mcp/response to envelope ID and prints the history from it on.
answer() {
	local line
	for _ in $(seq 1 150); do
		line=$(curl -s -f -H "Authorization: Bearer caller-token" "$api&limit=1000" | tr '\n' ' ' |
			grep -oE "\{[^{}]*\"kind\":\"mcp/response\"[^{}]*\"correlation_id\":\[\"$1\"\].*" | head -n 1) || true
		if [[ -n $line ]]; then
			printf '%s\n' "$line"
			return 0
		fi
		sleep 0.1
	done
	return 1
}
# answer_elicitations accepts, with an empty form, each elicitation/request addressed to the caller.
answer_elicitations() {
	local seen=" " ids id
	while :; do
		ids=$(curl -s -f -H "Authorization: Bearer caller-token" "$api&limit=1000" | tr '\n' ' ' |
			grep -oE '"id":"[^"]*"[^{}]*"to":\["caller"\],"kind":"elicitation/request"' | cut -d'"' -f4) || true
		for id in $ids; do
			[[ $seen == *" $id "* ]] && continue
			seen+="$id "
			post '{"protocol":"mew/v0.4","kind":"elicitation/response","to":["server"],"correlation_id":["'"$id"'"],"payload":{"action":"accept","content":{}}}' &&
				echo "elicitation $id answered through the space" >&2
		done
		sleep 0.1
	done
}
answer_elicitations &
pids+=($!)

# result ID prints the JSON-RPC result of the mcp/response to envelope ID (node: the suite runs on it).
result() {
	curl -s -f -H "Authorization: Bearer caller-token" "$api&limit=1000" | node -e '
		let s = ""; process.stdin.on("data", d => s += d).on("end", () => {
			const m = JSON.parse(s).messages.find(e => e.kind === "mcp/response" && (e.correlation_id || []).includes(process.argv[1]));
			process.stdout.write(JSON.stringify(m && m.payload && m.payload.result || {}));
		});' "$1"
}
post '{"protocol":"mew/v0.4","id":"conf-1","kind":"mcp/request","to":["server"],"payload":{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}}'
answer conf-1 >/dev/null || { echo "no answer to tools/list" >&2; exit 1; }
echo "tools/list answered through the space"
# The calls, one {name, arguments} a line: those the scenario names in its context (toolCalls), else every
# tool listed with the arguments the scenario's tool asks for: add_numbers (tools_call) adds a and b;
# json_schema_echo (json-schema-2020-12-preservation) gets back the input schema of the other tool as
# the caller received it through the space; the others take none.
calls=$(LIST=$(result conf-1) node -e '
	const tools = JSON.parse(process.env.LIST).tools || [];
	let ctx = {};
	try { ctx = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || "{}"); } catch {}
	const calls = ctx.toolCalls || tools.map(t => {
		if (t.name === "add_numbers") return { name: t.name, arguments: { a: 2, b: 3 } };
		if (t.name === "json_schema_echo") {
			const other = tools.find(o => o.name !== t.name);
			return { name: t.name, arguments: { schema: other ? other.inputSchema : {} } };
		}
		return { name: t.name, arguments: {} };
	});
	for (const c of calls) console.log(JSON.stringify(c));')
# All at once (sep-2322-client-request-state checks that parallel calls keep their request states apart).
n=2
while IFS= read -r c; do
	[[ -n $c ]] || continue
	post '{"protocol":"mew/v0.4","id":"conf-'"$n"'","kind":"mcp/request","to":["server"],"payload":{"jsonrpc":"2.0","id":'"$n"',"method":"tools/call","params":'"$c"'}}'
	n=$((n + 1))
done <<<"$calls"
for ((i = 2; i < n; i++)); do
	answer "conf-$i" >/dev/null || { echo "no answer to tools/call conf-$i" >&2; exit 1; }
	echo "tools/call conf-$i answered through the space"
done
cat "$dir/bridge.log" >&2
exit 0
