The REPL under a real terminal: Ctrl-C at the prompt drops the line and shows a new
prompt (as luajit and python do), never ending the session; `=expr` prints a value;
a Ctrl-C during a chunk stops the chunk only. Checked with libedit and with plain
stdio line input.

  $ export KLOOP_HISTORY=$PWD/hist HOME=$PWD
  $ cat > pty_repl.py <<'PY'
  > import os, pty, select, signal, sys, time
  > kloop = os.environ["KLOOP"]
  > pid, fd = pty.fork()
  > if pid == 0:
  >     os.execv(kloop, [kloop])
  > out = b""
  > def wait_for(tail, what, start=None, timeout=20):
  >     # reads until the new output ends with `tail` (a prompt), or says what it waited for
  >     global out
  >     start = len(out) if start is None else start
  >     end = time.time() + timeout
  >     while len(out) == start or not out.endswith(tail):
  >         left = end - time.time()
  >         r = select.select([fd], [], [], max(left, 0))[0] if left > 0 else []
  >         try:
  >             chunk = os.read(fd, 4096) if r else b""
  >         except OSError:
  >             chunk = b""
  >         if not chunk:
  >             print("(no %r after %s; the session ended or hung)" % (tail.decode(), what))
  >             return False
  >         out += chunk
  >     return True
  > def send(data, what, tail=b"> "):
  >     time.sleep(0.2)  # libedit sets up the terminal just after the prompt shows
  >     start = len(out)
  >     os.write(fd, data)
  >     return wait_for(tail, what, start)
  > ok = wait_for(b"> ", "start")
  > ok = ok and send(b"x = 42\n", "an assignment")
  > ok = ok and send(b"\x03", "Ctrl-C at an empty prompt")
  > ok = ok and send(b"y = 1 +", "a partial line", b"+") and send(b"\x03", "Ctrl-C after a partial line")
  > ok = ok and send(b"function f()\n", "the first line of a chunk", b">> ") and send(b"\x03", "Ctrl-C in a chunk")
  > if ok:
  >     time.sleep(0.2)
  >     os.kill(pid, signal.SIGINT); os.kill(pid, signal.SIGINT)  # two at once, as timeout(1) sends
  >     ok = wait_for(b"> ", "two SIGINTs")
  > ok = ok and send(b"=x\n", "=x")
  > ok = ok and send(b"=y, f\n", "=y, f")
  > if ok:
  >     time.sleep(0.2)
  >     os.write(fd, b"while true do end\n")
  >     time.sleep(0.5)
  >     ok = send(b"\x03", "Ctrl-C in an endless loop")
  > ok = ok and send(b"=x + 1\n", "=x + 1")
  > if ok:
  >     time.sleep(0.2)
  >     os.write(fd, b"\x04")  # Ctrl-D: the end of the session
  >     end = time.time() + 10
  >     while time.time() < end:
  >         try:
  >             chunk = os.read(fd, 4096) if select.select([fd], [], [], 1)[0] else b""
  >         except OSError:
  >             break
  >         out += chunk
  > status = -1
  > for _ in range(100):
  >     p, st = os.waitpid(pid, os.WNOHANG)
  >     if p:
  >         status = os.waitstatus_to_exitcode(st)
  >         break
  >     time.sleep(0.1)
  > else:
  >     os.kill(pid, signal.SIGKILL)
  > last = None
  > for line in out.decode(errors="replace").replace("\r\n", "\n").split("\n")[1:]:
  >     line = line.replace(">> ", "PP ").replace("> ", "P ").rstrip()
  >     # a traceback's frames name files; two SIGINTs at once may show one or two prompts
  >     if not line.startswith("\t") and line != "stack traceback:" and not (line == last and line in ("P", "P ^C")):
  >         print(line)
  >     last = line
  > print("exit", status)
  > PY

With libedit:

  $ python3 pty_repl.py
  P x = 42
  P ^C
  P y = 1 +^C
  P function f()
  PP ^C
  P ^C
  P =x
  42
  P =y, f
  nil\tnil (esc)
  P while true do end
  ^Cinterrupted
  P =x + 1
  43
  P ^D
  
  exit 0

With plain line input:

  $ KLOOP_NO_LINEEDIT=1 python3 pty_repl.py
  P x = 42
  P ^C
  P y = 1 +^C
  P function f()
  PP ^C
  P
  P =x
  42
  P =y, f
  nil\tnil (esc)
  P while true do end
  ^Cinterrupted
  P =x + 1
  43
  P
  
  exit 0
