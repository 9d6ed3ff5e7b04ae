"""tests/strategies/script_mock.py: scripts the mock LLM with a ladder of kernels.
usage: python3 script_mock.py PORT FILE... (each reply wraps one file in a ```c fence)"""
import json, sys, urllib.request
port, files = sys.argv[1], sys.argv[2:]
replies = [{"text": "Here is a faster version.\n\n```c\n" + open(f).read() + "```\n"} for f in files]
req = urllib.request.Request(f"http://127.0.0.1:{port}/control/script", method="POST",
                             data=json.dumps({"replies": replies, "reset": True}).encode(),
                             headers={"Content-Type": "application/json"})
print(json.load(urllib.request.urlopen(req, timeout=5)).get("ok", "scripted"))
