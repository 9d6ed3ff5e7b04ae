#!/bin/sh
# tests/mcp/setup_venv.sh: makes a Python venv with the `mcp` SDK (the client side of the
# kloop mcp test) at $1 where it is missing. Exit 0: ready; 77: cannot be had here (no
# python3 venv, or no way to reach PyPI), which CTest reports as skipped.
set -u
VENV=${1:?usage: setup_venv.sh VENV_DIR}
PY=${PYTHON:-python3}
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import mcp.client.stdio, jsonschema' 2>/dev/null; then
  exit 0
fi
command -v "$PY" >/dev/null 2>&1 || { echo "setup_venv: no $PY" >&2; exit 77; }
rm -rf "$VENV"
"$PY" -m venv "$VENV" >&2 || { echo "setup_venv: $PY -m venv failed" >&2; exit 77; }
# MCP_WHEEL: a local wheel of the SDK to prefer (its dependencies still come from PyPI)
if [ -n "${MCP_WHEEL:-}" ] && [ -f "$MCP_WHEEL" ]; then
  SPEC=$MCP_WHEEL
else
  SPEC=mcp
fi
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$SPEC" >&2 ||
  { echo "setup_venv: cannot install the mcp SDK (no network?)" >&2; rm -rf "$VENV"; exit 77; }
"$VENV/bin/python" -c 'import mcp.client.stdio, jsonschema' ||
  { echo "setup_venv: the mcp SDK does not import" >&2; exit 77; }
