A strategy's think hook (docs/SCRIPTING.md) runs while the worker computes; when it
fails, the run ends failed, says why, exits non-zero, and the store says so too.

  $ kloop() { "$KLOOP" "$@"; }
  $ export KLOOP_CACHE=$PWD/cache KLOOP_DB=$PWD/kloop.db
  $ cat > think_fail.lua <<'LUA'
  > local S = { name = "think_fail", requires = { api = 1 } }
  > local n = 0
  > function S.propose(ctx)
  >   n = n + 1
  >   if n > 3 then return {} end
  >   return { { source = ctx.task.source, defines = { KLOOP_T = tostring(n) }, proposer = "tune" } }
  > end
  > function S.think() error("no thoughts today") end
  > return S
  > LUA
  $ kloop think_fail.lua "$KLOOP_SRC/examples/cpu/saxpy.c" --timing-budget 0.02 --quiet > out.txt 2>&1; echo "exit $?"
  exit 1
  $ grep -c "think: .*no thoughts today" out.txt | awk '$1 >= 1 { print "the error is named" }'
  the error is named
  $ sqlite3 kloop.db "SELECT status FROM runs"
  failed
