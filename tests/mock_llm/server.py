#!/usr/bin/env python3
"""tests/mock_llm/server.py: a scripted LLM server for tests (OpenAI chat completions and Anthropic messages) with fault injection.

Started by the tests on 127.0.0.1 on a free port; stdlib only. It writes its port to
--port-file once it listens, and exits on POST /control/shutdown, when the process
named by --parent-pid is gone, or after --max-seconds (so a crashed test run never
leaves it behind).

Endpoints:
  POST /v1/chat/completions, POST /chat/completions   OpenAI-compatible
  POST /v1/messages, POST /messages                   Anthropic
  POST /control/script   {"replies": [step...], "default": step, "reset": true}
                         replies are consumed in order, one per model request;
                         when none is left, "default" answers (an echo by default)
  GET or POST /control/stats  {"count": n, "requests": [{path, headers, body, t}]}
  POST /control/reset    clears script, default and counters
  POST /control/shutdown

A step (every field optional):
  text            the reply's text (default: a CUDA kernel naming the request count)
  delay_s         sleep before answering (slow replies, deadlines)
  status          HTTP status (e.g. 500, 400, 429); the body is an error object
  retry_after     value of the retry-after header (seconds, as given)
  retry_after_ms  value of the retry-after-ms header
  quota           429 with an insufficient_quota error body (a spend limit)
  drop            close the connection without any response
  truncate        a 200 whose JSON body is cut in the middle (Content-Length matches)
  empty           a 200 with no choices (OpenAI) / no content blocks (Anthropic)
  no_content      a 200 whose message has no text
  usage           {"in": n, "out": n} token counts to report
  finish          finish_reason / stop_reason (default stop / end_turn)
  body            a raw body string sent as is with the status
  auth            401 with an invalid_api_key error body (a rejected key)
  code_file       the reply wraps this file's text in a ```c fence (host tasks)
  pad_mb          prose of this many MB before the code (a huge reply)
  non_utf8        raw bytes that are not UTF-8 in the prose and in a comment of the code
  stall_s         send the status line and headers, then stall this long before the body
  reject_param    a 400 naming this parameter when the request sends it (as OpenAI
                  does for max_tokens / temperature on reasoning models)
  tool_calls      the reply calls tools, in the request's format: a list of {"name",
                  "arguments" (an object; a string is sent as is: arguments that are
                  not JSON), "id" (default call_N_I), "source_file" (its text becomes
                  arguments.source)}; text defaults to none, finish to tool_calls
                  (OpenAI) / tool_use (Anthropic)

As a client (tests/cli transcripts): server.py --control PORT PATH [JSON] POSTs JSON to
http://127.0.0.1:PORT/PATH and prints the answer.
"""
import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
STATE = {"script": [], "default": None, "count": 0, "requests": []}


def default_text(n, model):
    return (
        "Here is a faster kernel.\n\n```cuda\n"
        "// kloop: launch grid = {cdiv(N, 256)}, block = {256}\n"
        'extern "C" __global__ void scale(int N, const float *x, float *y) {\n'
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;  // reply %d from %s\n"
        "  if (i < N) y[i] = 2.0f * x[i];\n"
        "}\n```\n" % (n, model)
    )


def tool_calls(spec, n):
    """The calls a step scripts, with ids and sources filled in."""
    out = []
    for i, c in enumerate(spec or []):
        args = c.get("arguments", {})
        if c.get("source_file"):
            with open(c["source_file"]) as f:
                args = dict(args, source=f.read())
        out.append({"id": c.get("id", "call_%d_%d" % (n, i + 1)), "name": c.get("name", ""), "arguments": args})
    return out


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet: tests read stats, not logs
        pass

    def send_json(self, status, obj, headers=None):
        data = obj if isinstance(obj, (bytes, bytearray)) else json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, str(v))
        self.end_headers()
        self.wfile.write(data)

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n > 0 else b""

    def do_GET(self):
        if self.path == "/control/stats":
            with LOCK:
                self.send_json(200, {"count": STATE["count"], "requests": STATE["requests"]})
        else:
            self.send_json(404, {"error": {"message": "not found"}})

    def do_POST(self):
        raw = self.read_body()
        if self.path.startswith("/control/"):
            return self.control(raw)
        if self.path in ("/v1/chat/completions", "/chat/completions"):
            return self.model_reply(raw, "openai")
        if self.path in ("/v1/messages", "/messages"):
            return self.model_reply(raw, "anthropic")
        self.send_json(404, {"error": {"message": "no such endpoint " + self.path}})

    def control(self, raw):
        try:
            req = json.loads(raw or b"{}")
        except ValueError:
            return self.send_json(400, {"error": "bad json"})
        with LOCK:
            if self.path == "/control/script":
                if req.get("reset"):
                    STATE.update(script=[], default=None, count=0, requests=[])
                STATE["script"].extend(req.get("replies", []))
                if "default" in req:
                    STATE["default"] = req["default"]
            elif self.path == "/control/stats":
                return self.send_json(200, {"count": STATE["count"], "requests": STATE["requests"]})
            elif self.path == "/control/reset":
                STATE.update(script=[], default=None, count=0, requests=[])
            elif self.path == "/control/shutdown":
                self.send_json(200, {"ok": True})
                threading.Thread(target=self.server.shutdown, daemon=True).start()
                return
        self.send_json(200, {"ok": True})

    def model_reply(self, raw, api):
        try:
            req = json.loads(raw)
        except ValueError:
            return self.send_json(400, {"error": {"type": "invalid_request_error", "message": "body is not JSON"}})
        with LOCK:
            STATE["count"] += 1
            n = STATE["count"]
            STATE["requests"].append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                                      "body": req, "t": time.time()})
            step = STATE["script"].pop(0) if STATE["script"] else (STATE["default"] or {})
        step = dict(step)
        if step.get("delay_s"):
            time.sleep(float(step["delay_s"]))
        if step.get("drop"):
            self.close_connection = True
            try:
                self.connection.shutdown(2)
            except OSError:
                pass
            return
        headers = {}
        if "retry_after" in step:
            headers["retry-after"] = step["retry_after"]
        if "retry_after_ms" in step:
            headers["retry-after-ms"] = step["retry_after_ms"]
        headers["x-request-id"] = "req-%d" % n
        if step.get("auth"):
            return self.send_json(401, {"error": {"type": "invalid_request_error", "code": "invalid_api_key",
                                                  "message": "Incorrect API key provided."}}, headers)
        param = step.get("reject_param")
        if param and param in req:
            msg = ("Unsupported parameter: '%s' is not supported with this model." % param if param != "temperature"
                   else "Unsupported value: 'temperature' does not support %s with this model. Only the default (1) value is supported." % req[param])
            return self.send_json(400, {"error": {"type": "invalid_request_error", "param": param,
                                                  "code": "unsupported_parameter", "message": msg}}, headers)
        if step.get("quota"):
            return self.send_json(429, {"error": {"type": "insufficient_quota", "code": "insufficient_quota",
                                                  "message": "You exceeded your current quota, please check your plan and billing details."}}, headers)
        status = int(step.get("status", 200))
        if "body" in step:
            return self.send_json(status, step["body"].encode(), headers)
        if status != 200:
            kind = {429: "rate_limit_error", 400: "invalid_request_error"}.get(status, "api_error")
            return self.send_json(status, {"error": {"type": kind, "message": "mock error %d" % status}}, headers)
        model = req.get("model", "?")
        calls = tool_calls(step.get("tool_calls"), n)
        text = step.get("text", "" if calls else default_text(n, model))
        if step.get("code_file"):
            with open(step["code_file"]) as f:
                code = f.read()
            if step.get("non_utf8"):
                code = "/* \udcff\udcfe odd bytes */\n" + code
            text = "Here is a faster version.\n\n```c\n" + code + "```\n"
        if step.get("non_utf8"):
            text = "Bytes that are not UTF-8: \udcff\udcfe\udc80.\n" + text
        if step.get("pad_mb"):
            line = "Some thoughts about the kernel, repeated to make a long reply.\n"
            text = line * int(float(step["pad_mb"]) * 1048576 / len(line)) + text
        usage = step.get("usage") or {"in": max(1, len(raw) // 4), "out": max(1, len(text) // 4)}
        if api == "openai":
            msg = {"role": "assistant", "content": None if (step.get("no_content") or (calls and not text)) else text}
            if calls:
                msg["tool_calls"] = [{"id": c["id"], "type": "function", "function": {"name": c["name"],
                                      "arguments": c["arguments"] if isinstance(c["arguments"], str)
                                      else json.dumps(c["arguments"])}} for c in calls]
            obj = {"id": "chatcmpl-%d" % n, "object": "chat.completion", "model": model,
                   "choices": [] if step.get("empty") else
                   [{"index": 0, "message": msg,
                     "finish_reason": step.get("finish", "tool_calls" if calls else "stop")}],
                   "usage": {"prompt_tokens": usage["in"], "completion_tokens": usage["out"],
                             "total_tokens": usage["in"] + usage["out"]}}
        else:
            content = [] if (step.get("empty") or step.get("no_content") or (calls and not text)) \
                else [{"type": "text", "text": text}]
            content += [{"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["arguments"]} for c in calls]
            obj = {"id": "msg_%d" % n, "type": "message", "role": "assistant", "model": model, "content": content,
                   "stop_reason": step.get("finish", "tool_use" if calls else "end_turn"),
                   "usage": {"input_tokens": usage["in"], "output_tokens": usage["out"]}}
        # ensure_ascii=False and surrogateescape: the odd bytes of non_utf8 go out raw
        data = json.dumps(obj, ensure_ascii=False).encode("utf-8", "surrogateescape")
        if step.get("truncate"):
            data = data[: len(data) // 2]
        if step.get("stall_s"):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.flush()
            time.sleep(float(step["stall_s"]))
            try:
                self.wfile.write(data)
            except OSError:
                pass
            return
        self.send_json(200, data, headers)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the default 5 makes a burst of connects wait for SYN retries


def watchdog(server, parent_pid, max_seconds):
    t0 = time.time()
    while True:
        time.sleep(0.5)
        gone = parent_pid and not os.path.exists("/proc/%d" % parent_pid)
        if gone or time.time() - t0 > max_seconds:
            server.shutdown()
            return


def control(port, path, body):
    import urllib.request
    req = urllib.request.Request("http://127.0.0.1:%s/%s" % (port, path.lstrip("/")), method="POST",
                                 data=(body or "{}").encode(), headers={"Content-Type": "application/json"})
    print(urllib.request.urlopen(req, timeout=10).read().decode())


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--control":
        return control(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--parent-pid", type=int, default=0)
    ap.add_argument("--max-seconds", type=float, default=600)
    a = ap.parse_args()
    server = Server(("127.0.0.1", a.port), Handler)
    threading.Thread(target=watchdog, args=(server, a.parent_pid, a.max_seconds), daemon=True).start()
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, a.port_file)  # atomic: the reader never sees a partial number
    server.serve_forever()


if __name__ == "__main__":
    main()
