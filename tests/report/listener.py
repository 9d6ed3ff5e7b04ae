"""tests/report/listener.py: a TCP listener standing in for every proxy and host; it logs the host each connection asks for.
usage: python3 listener.py PORT_FILE HOSTS_FILE SECONDS: writes its port, then one line per connection (the host
of its CONNECT or absolute-URL request, or "?" when it sent nothing readable) to HOSTS_FILE, until SECONDS or SIGTERM."""
import re
import signal
import socket
import sys
import time

port_file, hosts_file, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(16)
s.settimeout(0.2)
out = open(hosts_file, "w", buffering=1)
open(port_file, "w").write(str(s.getsockname()[1]))
stop = [False]
signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__(0, True))
end = time.time() + seconds
while not stop[0] and time.time() < end:
    try:
        c, _ = s.accept()
    except socket.timeout:
        continue
    c.settimeout(0.5)
    try:
        head = c.recv(300).decode("latin-1")
    except OSError:
        head = ""
    m = re.match(r"CONNECT ([^:\s]+)", head) or re.match(r"[A-Z]+ \w+://([^/:\s]+)", head) \
        or re.search(r"\r\nHost: ([^:\s]+)", head)
    out.write((m.group(1) if m else "?") + "\n")
    c.close()
