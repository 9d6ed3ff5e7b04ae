# tests/mpi/bad_hello.py SOCK: what a kloop-mpi slot answers to a client that is not a
# kloop --worker-remote proxy: a hello naming a path for a backend, then garbage. Prints
# the END chunk's code and words (or "no end").
import socket, struct, sys

s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
s.connect(sys.argv[1])
s.sendall(b"kloop-relay 1 ../../../tmp/x PATH\n\x00\x01garbage")
buf = b""
try:
    while True:
        d = s.recv(65536)
        if not d:
            break
        buf += d
except socket.timeout:
    pass
while len(buf) >= 5:
    kind, n = buf[0:1], struct.unpack("<I", buf[1:5])[0]
    pay, buf = buf[5:5 + n], buf[5 + n:]
    if kind == b"E":
        k, code = struct.unpack("<ii", pay[:8])
        print("end: kind %d code %d: %s" % (k, code, pay[8:].decode()))
        sys.exit(0)
print("no end")
