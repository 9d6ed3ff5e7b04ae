A Ctrl-C is not lost while kloop runs a helper of its own: mkdir -p (the compile caches
make their folders for every new binary) once ran through system(), which ignores SIGINT
in kloop while its child runs; a run of a never-ending strategy then missed a Ctrl-C that
landed there and went on forever. Now the folders are made in C.

  $ cat > loop.lua <<'LUA'
  > local util, sys = require("kloop.util"), require("kloop.core.sys")
  > local t0, n = sys.now(), 0
  > while sys.now() - t0 < 4 do
  >   assert(util.mkdir_p("d/a/b/" .. (n % 10)))
  >   n = n + 1
  > end
  > print("the loop ran to its end")
  > LUA
  $ "$KLOOP" loop.lua > loop.out 2>&1 & pid=$!; sleep 1; kill -INT $pid; wait $pid; echo "exit $?"; cat loop.out
  exit 1
  kloop: interrupted
  $ test -d d/a/b/0 && echo made
  made
