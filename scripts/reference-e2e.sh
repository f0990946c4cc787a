#!/usr/bin/env bash
# Runs the reference TypeScript mew's end-to-end suite, unmodified, against this
# repository's mew. It fetches nothing: give it a checkout of the reference
# repository (rjcorwin/mew-protocol) that has its node_modules and dist/:
#
#   git clone https://github.com/rjcorwin/mew-protocol /tmp/mewref
#   (cd /tmp/mewref && npm ci && npm run build)
#   scripts/reference-e2e.sh /tmp/mewref [scenario-name ...]
#
# Each e2e/scenario-*/test.sh is run with our mew first on PATH, one at a time,
# under a 120 s limit as the reference's runner gives each. The last line is
# "N passed, M failed"; the exit status is 1 when any scenario failed. With
# names (scenario-8-grant, 8-grant, ...) only those scenarios run. A failed
# scenario's output is kept in $MEW_E2E_OUT (default /tmp/mew-reference-e2e).
#
# The reference's own runner (e2e/run-all-tests.sh) is not used: it installs
# the TypeScript mew globally and kills processes by broad name patterns.
set -uo pipefail

usage() {
  echo "usage: $0 REFERENCE_CHECKOUT [scenario ...]" >&2
  exit 2
}

[[ $# -ge 1 ]] || usage
REF="$(cd "$1" 2>/dev/null && pwd)" || {
  echo "$0: no such directory: $1" >&2
  exit 2
}
shift
if [[ ! -d "${REF}/e2e" ]]; then
  echo "$0: ${REF} has no e2e/: not a checkout of rjcorwin/mew-protocol" >&2
  exit 2
fi
if [[ ! -d "${REF}/node_modules/ws" || ! -f "${REF}/dist/agent/index.js" ]]; then
  echo "$0: ${REF} needs its node_modules and dist/ (the scenarios' agents load ws and dist/):" >&2
  echo "    (cd ${REF} && npm ci && npm run build)" >&2
  exit 2
fi
for tool in node curl jq python3 go; do
  command -v "${tool}" >/dev/null 2>&1 || {
    echo "$0: ${tool} is needed and not on PATH" >&2
    exit 2
  }
done

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${MEW_E2E_OUT:-/tmp/mew-reference-e2e}"
BIN="$(mktemp -d)"
trap 'rm -rf "${BIN}"' EXIT
mkdir -p "${OUT}"

echo "building mew from ${ROOT}"
(cd "${ROOT}" && go build -o "${BIN}/mew" ./cmd/mew) || {
  echo "$0: go build failed" >&2
  exit 1
}

# jq 1.6 (Debian 12) has -e answer 4 when the last input line matched nothing,
# whatever matched before (jq issue 1139, fixed in 1.7); the suite's
# capability-log helpers use jq -e select(...) over whole logs and were
# written against 1.7. On 1.6 a shim gives -e the 1.7 meaning.
REAL_JQ="$(command -v jq)"
if "${REAL_JQ}" --version 2>/dev/null | grep -q '^jq-1\.[0-6]\b'; then
  cat >"${BIN}/jq" <<EOF
#!/usr/bin/env bash
# jq -e as jq 1.7 has it: the status of the last output of all inputs.
args=() exit_status=false
for a in "\$@"; do
  if [[ "\$a" == "-e" || "\$a" == "--exit-status" ]]; then exit_status=true; else args+=("\$a"); fi
done
if [[ \$exit_status == false ]]; then exec "${REAL_JQ}" "\$@"; fi
out="\$("${REAL_JQ}" -c "\${args[@]}")" || exit \$?
[[ -n "\$out" ]] || exit 4
printf '%s\n' "\$out"
last="\${out##*\$'\n'}"
[[ "\$last" != null && "\$last" != false ]]
EOF
  chmod +x "${BIN}/jq"
fi

# MEW_E2E_NODE names a node binary to run the scenarios' agents with instead
# of the one on PATH (the suite was written for Node 23 and later; Debian 12
# has 20, which needs the options below).
if [[ -n "${MEW_E2E_NODE:-}" ]]; then
  [[ -x "${MEW_E2E_NODE}" ]] || {
    echo "$0: MEW_E2E_NODE=${MEW_E2E_NODE} is not an executable" >&2
    exit 2
  }
  ln -s "$(cd "$(dirname "${MEW_E2E_NODE}")" && pwd)/$(basename "${MEW_E2E_NODE}")" "${BIN}/node"
fi
export PATH="${BIN}:${PATH}"
echo "node: $(node --version) ($(command -v node))"

# Node before 22 needs these for the reference's agents (a global WebSocket,
# require() of its ES module dist/).
node_major="$(node -p 'process.versions.node.split(".")[0]')"
if [[ "${node_major}" -lt 22 ]]; then
  export NODE_OPTIONS="${NODE_OPTIONS:-} --experimental-websocket --experimental-require-module --no-warnings"
fi

echo "mew: $(command -v mew)"

scenarios=()
if [[ $# -gt 0 ]]; then
  for name in "$@"; do
    name="${name#scenario-}"
    [[ -d "${REF}/e2e/scenario-${name}" ]] || {
      echo "$0: no scenario ${name} in ${REF}/e2e" >&2
      exit 2
    }
    scenarios+=("${REF}/e2e/scenario-${name}")
  done
else
  while IFS= read -r d; do scenarios+=("${d}"); done < <(find "${REF}/e2e" -mindepth 1 -maxdepth 1 -type d -name 'scenario-*' | sort -V)
fi

passed=0 failed=0 failures=()
for dir in "${scenarios[@]}"; do
  name="$(basename "${dir}")"
  log="${OUT}/${name}.log"
  start=${SECONDS}
  (cd "${dir}" && timeout 120 ./test.sh) >"${log}" 2>&1
  rc=$?
  took=$((SECONDS - start))
  if [[ ${rc} -eq 0 ]]; then
    passed=$((passed + 1))
    printf 'PASS %-32s %3ds\n' "${name}" "${took}"
  else
    failed=$((failed + 1))
    failures+=("${name}")
    why="exit ${rc}"
    [[ ${rc} -eq 124 ]] && why="timed out"
    printf 'FAIL %-32s %3ds (%s; output in %s)\n' "${name}" "${took}" "${why}" "${log}"
    grep -E '✗|FAIL|Error' "${log}" | head -n 5 | sed 's/^/       /'
  fi
done

if [[ ${failed} -gt 0 ]]; then
  echo "failed: ${failures[*]}"
fi
echo "${passed} passed, ${failed} failed"
[[ ${failed} -eq 0 ]]
