A host candidate runs under a real terminal and tries to push a line into its input
queue (TIOCSTI, tests/adversarial/host/tty_inject.c). The worker has no controlling
terminal and the sandbox refuses terminal ioctls: the candidate is stopped and nothing
reaches the terminal, neither its echo nor its input queue.

  $ export KLOOP_CACHE=$PWD/cache
  $ cat > pty_run.py <<'PY'
  > import os, pty, select, sys, termios
  > kloop, src = os.environ["KLOOP"], os.environ["KLOOP_SRC"]
  > marker = b"kloop-tty-injected"
  > pid, fd = pty.fork()
  > if pid == 0:
  >     # the child: a new session whose controlling terminal is the pty, on fds 0-2
  >     os.chdir(src)
  >     rc = os.spawnv(os.P_WAIT, kloop, [kloop, "check", "examples/cpu/sgemm.c",
  >                    "--candidate", "tests/adversarial/host/tty_inject.c"])
  >     attrs = termios.tcgetattr(0)
  >     attrs[3] &= ~(termios.ICANON | termios.ECHO)
  >     attrs[6][termios.VMIN], attrs[6][termios.VTIME] = 0, 0
  >     termios.tcsetattr(0, termios.TCSANOW, attrs)
  >     queued = os.read(0, 4096)
  >     with open(os.environ["CRAMTMP"] + "/tty_result", "w") as f:
  >         f.write("exit %d\nqueued %d bytes%s\n" % (rc, len(queued), " (injected)" if marker in queued else ""))
  >     os._exit(0)
  > out = b""
  > while True:
  >     try:
  >         r, _, _ = select.select([fd], [], [], 120)
  >         chunk = os.read(fd, 4096) if r else b""
  >     except OSError:
  >         chunk = b""
  >     if not chunk:
  >         break
  >     out += chunk
  > os.waitpid(pid, 0)
  > for line in out.decode(errors="replace").splitlines():
  >     if line.startswith("verdict"):
  >         print(" ".join(line.split()))
  > print("echoed on the terminal:", marker in out)
  > sys.stdout.write(open(os.environ["CRAMTMP"] + "/tty_result").read())
  > PY
  $ python3 pty_run.py
  verdict crashed
  echoed on the terminal: False
  exit 3
  queued 0 bytes
