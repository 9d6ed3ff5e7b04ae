The REPL: results printed, errors do not end the session, multi-line input.

  $ kloop() { "$KLOOP" "$@"; }
  $ export KLOOP_NO_LINEEDIT=1 KLOOP_HISTORY=$PWD/hist

Prompts are shown as P (cram reads a leading '>' as its own continuation mark).

  $ printf '1 + 2\nerror("oops")\nt = {\n1, 2}\n#t\n"still here"\nlocal function f() error("deep") end f()\n' | kloop -i 2>&1 | sed "s/> /P /g" | grep -v '^\s'
  P 3
  P oops
  stack traceback:
  P >P P 2
  P still here
  P stdin:1: deep
  stack traceback:
  P 
