#!/bin/sh
# tests/mcp/run.sh KLOOP VENV: the MCP client test (tests/mcp/client_test.py) with the
# mcp SDK in VENV (made where missing); exit 77 (skipped) where the SDK cannot be had.
set -u
KLOOP=$(cd "$(dirname "${1:?usage: run.sh KLOOP VENV}")" && pwd)/$(basename "$1")
VENV=${2:?usage: run.sh KLOOP VENV}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
sh "$HERE/setup_venv.sh" "$VENV" || exit $?
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kloop-mcp.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
"$VENV/bin/python" "$HERE/client_test.py" "$KLOOP" "$ROOT" "$WORK"
rc=$?
[ $rc -ne 0 ] && [ -f "$WORK/server.stderr" ] && tail -20 "$WORK/server.stderr" >&2
exit $rc
