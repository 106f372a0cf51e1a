"""Scripted model servers for the real-client suite: the Anthropic Messages API (Claude Code),
the OpenAI Responses API (Codex CLI) and the Gemini API (Gemini CLI), each streaming over SSE
on loopback.

A script is a list of tool calls. The model makes call N once the request carries N tool
results, then answers with plain text. Every request body is kept, so a scenario can check what
the model was shown (a refusal's reason, a secret that must not be there).

Standard library only: CI has python3, and nothing here is worth a dependency.
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Script:
    """What the model does, and what it was sent."""

    def __init__(self):
        self.lock = threading.Lock()
        self.calls = []  # [(tool name, input dict)]
        self.requests = []  # [(path, parsed body)]

    def set(self, calls):
        with self.lock:
            self.calls = list(calls)
            self.requests = []

    def record(self, path, body):
        with self.lock:
            self.requests.append((path, body))

    def next_call(self, results):
        with self.lock:
            if results < len(self.calls):
                return self.calls[results]
            return None

    def seen(self):
        """Everything the model was sent after the first request, as one string."""
        with self.lock:
            return "\n".join(json.dumps(b) for _, b in self.requests)


def _sse(events):
    out = []
    for name, data in events:
        if name:
            out.append(f"event: {name}\n")
        out.append(f"data: {json.dumps(data)}\n\n")
    return "".join(out).encode()


# --- Anthropic Messages API --------------------------------------------------------------


def _claude_results(body):
    n = 0
    for msg in body.get("messages", []):
        content = msg.get("content")
        if msg.get("role") == "user" and isinstance(content, list):
            n += sum(1 for b in content if isinstance(b, dict) and b.get("type") == "tool_result")
    return n


def claude_reply(script, body):
    # Side requests (titles, summaries) carry no tools: a short text answers them.
    call = script.next_call(_claude_results(body)) if body.get("tools") else None
    n = len(script.requests)
    if call is None:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": "done"}
        stop = "end_turn"
    else:
        name, args = call
        block = {"type": "tool_use", "id": f"toolu_{n:04d}", "name": name, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(args)}
        stop = "tool_use"
    usage = {"input_tokens": 10, "output_tokens": 5}
    message = {
        "id": f"msg_{n:04d}", "type": "message", "role": "assistant",
        "model": body.get("model", "claude"), "content": [], "stop_reason": None,
        "stop_sequence": None, "usage": usage,
    }
    if not body.get("stream"):
        full = dict(message, stop_reason=stop)
        if call is None:
            full["content"] = [{"type": "text", "text": "done"}]
        else:
            full["content"] = [dict(block, input=call[1])]
        return "application/json", json.dumps(full).encode()
    return "text/event-stream", _sse([
        ("message_start", {"type": "message_start", "message": message}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                           "usage": {"output_tokens": 5}}),
        ("message_stop", {"type": "message_stop"}),
    ])


# --- OpenAI Responses API ----------------------------------------------------------------


def _codex_results(body):
    items = body.get("input", [])
    if not isinstance(items, list):
        return 0
    return sum(1 for i in items if isinstance(i, dict) and i.get("type", "").endswith("call_output"))


def codex_reply(script, body):
    call = script.next_call(_codex_results(body)) if body.get("tools") else None
    n = len(script.requests)
    rid = f"resp_{n:04d}"
    if call is None:
        item = {"type": "message", "id": f"msg_{n:04d}", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": "done", "annotations": []}]}
    else:
        name, args = call
        if name == "apply_patch":
            item = {"type": "custom_tool_call", "id": f"ctc_{n:04d}", "call_id": f"call_{n:04d}",
                    "name": name, "input": args["patch"], "status": "completed"}
        else:
            item = {"type": "function_call", "id": f"fc_{n:04d}", "call_id": f"call_{n:04d}",
                    "name": name, "arguments": json.dumps(args), "status": "completed"}
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
    return "text/event-stream", _sse([
        ("response.created", {"type": "response.created", "response": {"id": rid}}),
        ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}),
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
        ("response.completed", {"type": "response.completed",
                                "response": {"id": rid, "usage": usage, "output": [item]}}),
    ])


# --- Gemini API --------------------------------------------------------------------------


def _gemini_results(body):
    n = 0
    for c in body.get("contents", []):
        n += sum(1 for p in c.get("parts", []) if isinstance(p, dict) and "functionResponse" in p)
    return n


def gemini_reply(script, body, stream):
    config = body.get("generationConfig") or {}
    usage = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
    if config.get("responseJsonSchema") or config.get("responseSchema") or not body.get("tools"):
        # The router (and any other structured side call) asks for JSON.
        text = json.dumps({"reasoning": "scripted", "model_choice": "flash",
                           "complexity_reasoning": "scripted", "complexity_score": 1})
        parts = [{"text": text}]
    else:
        call = script.next_call(_gemini_results(body))
        if call is None:
            parts = [{"text": "done"}]
        else:
            parts = [{"functionCall": {"name": call[0], "args": call[1]}}]
    chunk = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP",
                             "index": 0}], "usageMetadata": usage, "modelVersion": "gemini-scripted"}
    if stream:
        return "text/event-stream", _sse([(None, chunk)])
    return "application/json", json.dumps(chunk).encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _send(self, status, ctype, data):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        # Model listings and health checks: an empty list is enough for every client.
        self._send(200, "application/json", b'{"data": [], "models": []}')

    def do_HEAD(self):
        self._send(200, "application/json", b"")

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        script = self.server.script
        path = self.path
        if path.startswith("/v1/messages/count_tokens"):
            return self._send(200, "application/json", b'{"input_tokens": 10}')
        script.record(path, body)
        if path.startswith("/v1/messages"):
            ctype, data = claude_reply(script, body)
        elif path.endswith("/responses") or "/responses?" in path:
            ctype, data = codex_reply(script, body)
        elif ":streamGenerateContent" in path:
            ctype, data = gemini_reply(script, body, True)
        elif ":generateContent" in path:
            ctype, data = gemini_reply(script, body, False)
        elif ":countTokens" in path:
            ctype, data = "application/json", b'{"totalTokens": 10}'
        else:
            ctype, data = "application/json", b"{}"
        self._send(200, ctype, data)


def start():
    """Starts a server on a free loopback port; returns (server, script)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.script = Script()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.script
