kloop's command-line contract: help, version, errors and exit codes.

  $ kloop() { "$KLOOP" "$@"; }

Help goes to stdout with exit 0:

  $ kloop --help | head -2
  usage: kloop [options] SCRIPT [TARGET] [-- script args]
         kloop COMMAND [args]
  $ kloop -h > /dev/null; echo $?
  0

Bad usage goes to stderr with the usage text, exit 2:

  $ kloop --frobnicate 2>&1 >/dev/null | head -2
  kloop: unknown option --frobnicate
  usage: kloop [options] SCRIPT [TARGET] [-- script args]
  $ kloop --frobnicate 2>/dev/null; echo $?
  2
  $ kloop -e 2>&1 | head -1
  kloop: -e needs a Lua chunk

--version names kloop, LuaJIT and the backend it found:

  $ kloop --version | head -1 | sed 's/[0-9][0-9.a-z-]*/V/g'
  kloop V (LuaJIT V, libcurl V, SQLite V)
  $ kloop --version | grep -c '^backend: '
  1
  $ kloop --version | grep -c '^own kernels: [0-9]* binaries shipped'
  1

-e runs chunks; cjson is preloaded:

  $ kloop -e 'print(require("cjson").encode({1,2}))'
  [1,2]
  $ kloop -e 'print(kloop.api_version)'
  1

A script error prints FILE:LINE: message and a traceback, exit 1:

  $ printf 'local x = 1\nerror("boom")\n' > bad.lua
  $ kloop bad.lua 2>&1 | head -2
  kloop: bad.lua:2: boom
  stack traceback:
  $ kloop bad.lua 2>/dev/null; echo $?
  1
  $ kloop -e 'error("nope")' 2>&1 | head -1
  kloop: (command line):1: nope

A syntax error is reported the same way:

  $ printf 'x = = 1\n' > syntax.lua
  $ kloop syntax.lua; echo $?
  kloop: syntax.lua:1: unexpected symbol near '='
  1

Scripts get arg, and the arguments after the script:

  $ printf 'print(arg[0], arg[1], arg[2], select("#", ...))\n' > args.lua
  $ kloop args.lua kernels/x.cu -- --budget
  args.lua\tkernels/x.cu\t--budget\t2 (esc)

A bare name that is nowhere names every place tried:

  $ kloop nosuchstrategy 2>&1 | sed "s#$KLOOP_SRC#SRC#g"
  kloop: no script named 'nosuchstrategy' (tried: nosuchstrategy, strategies/nosuchstrategy.lua, strategies/nosuchstrategy, SRC/strategies/nosuchstrategy.lua, SRC/strategies/nosuchstrategy); set KLOOP_PATH to add folders
  $ kloop nosuchstrategy 2>/dev/null; echo $?
  1

A script from stdin, with - or with no arguments when stdin is not a terminal:

  $ echo 'print("from stdin")' | kloop -
  from stdin
  $ echo 'print(1 + 1)' | kloop
  2

-i after a script enters the REPL (here fed from a pipe):

  $ printf 'x = 41\n' > setx.lua
  $ printf 'x + 1\n' | KLOOP_NO_LINEEDIT=1 kloop -i setx.lua | sed 's/> /P /g'
  P 42
  P 
