#!/bin/sh
# tests/lint/luacheck.sh [SRC_ROOT]: luacheck over kloop's Lua with the settings of .luacheckrc.
# Exit 0 when clean, 1 listing the warnings, 77 (skipped) where luacheck is missing.
root=${1:-$(dirname "$0")/../..}
cd "$root" || exit 2
command -v luacheck >/dev/null 2>&1 || { echo "luacheck not found (apt-get install lua-check): skipped"; exit 77; }
# luacheck exits 1 for warnings, 2 for errors (a syntax error), 3+ when it cannot run.
luacheck --config .luacheckrc --no-color --codes --formatter plain \
  lua strategies kernels/*.lua examples tests/spec
rc=$?
[ "$rc" -eq 0 ] && echo "luacheck: clean"
[ "$rc" -gt 1 ] && exit 2
exit "$rc"
