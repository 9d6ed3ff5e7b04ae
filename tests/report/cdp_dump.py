"""tests/report/cdp_dump.py: the DOM of a page as Chromium builds it, read over the DevTools protocol (so it works with JavaScript off).
usage: python3 cdp_dump.py OUT.html URL CHROMIUM [ARGS...]
Chromium's --dump-dom evaluates a script to serialize the page, which a page loaded
with --blink-settings=scriptEnabled=false never runs; DOM.getOuterHTML needs no script.
The browser is driven through --remote-debugging-pipe (fds 3 and 4, NUL-framed JSON)."""
import json
import os
import subprocess
import sys
import time

out_path, url, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
to_r, to_w = os.pipe()      # we write, Chromium reads on fd 3
from_r, from_w = os.pipe()  # Chromium writes on fd 4, we read


def child_fds():
    # through fresh copies: a pipe that already is fd 3 or 4 would keep its close-on-exec flag
    r, w = os.dup(to_r), os.dup(from_w)
    os.dup2(r, 3)
    os.dup2(w, 4)
    os.set_inheritable(3, True)
    os.set_inheritable(4, True)


# close_fds would close 3 and 4 after preexec_fn placed them
proc = subprocess.Popen(cmd + ["--remote-debugging-pipe", "about:blank"], preexec_fn=child_fds,
                        stdout=subprocess.DEVNULL, stderr=open(out_path + ".log", "w"), close_fds=False)
os.close(to_r)
os.close(from_w)
buf, seq, deadline = b"", [0], time.time() + 60


def send(method, params=None, session=None):
    seq[0] += 1
    msg = {"id": seq[0], "method": method, "params": params or {}}
    if session:
        msg["sessionId"] = session
    os.write(to_w, json.dumps(msg).encode() + b"\0")
    return seq[0]


def recv():
    global buf
    while b"\0" not in buf:
        if time.time() > deadline:
            raise SystemExit("cdp_dump: no answer from chromium")
        chunk = os.read(from_r, 65536)
        if not chunk:
            raise SystemExit("cdp_dump: chromium closed the pipe")
        buf += chunk
    msg, buf = buf.split(b"\0", 1)
    return json.loads(msg)


def call(method, params=None, session=None):
    want = send(method, params, session)
    while True:
        m = recv()
        if m.get("id") == want:
            if "error" in m:
                raise SystemExit("cdp_dump: %s: %s" % (method, m["error"]))
            return m.get("result", {})


def wait_event(name, session):
    while True:
        m = recv()
        if m.get("method") == name and m.get("sessionId") == session:
            return m


try:
    target = call("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    call("Page.enable", None, session)
    call("Page.navigate", {"url": url}, session)
    wait_event("Page.loadEventFired", session)
    root = call("DOM.getDocument", {"depth": -1}, session)["root"]
    html = call("DOM.getOuterHTML", {"nodeId": root["nodeId"]}, session)["outerHTML"]
    with open(out_path, "w", encoding="utf-8") as f:
        f.write(html)
    try:
        call("Browser.close")
    except SystemExit:
        pass
finally:
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
