"""A scripted model server on 127.0.0.1 for the end-to-end tests with the real agent CLIs.

It speaks just enough of three wire protocols for an agent to run a short session:
the Anthropic Messages API (``POST /v1/messages``, streamed as server-sent events, as
Claude Code uses it), the OpenAI Responses API (``POST /v1/responses``, streamed, as
Codex uses it through a ``model_providers`` entry) and Gemini's
``generateContent``/``streamGenerateContent``. Every request is recorded (path and JSON
body) so a test asserts on what the agent actually sent. The replies follow a script:
a function (the request's turn, as neutral data) -> one reply (text, or a tool call).

It binds the loopback interface only, on a random port, answers a bounded number of
requests and stops itself after a time limit: no real API is ever called.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Turn:
    """What the script sees of one model request."""

    protocol: str                # anthropic | openai | gemini
    tools: list[str]             # the tool names the agent offers
    tool_results: list[str]      # results of earlier tool calls in this conversation (text)
    text: str                    # the whole request body as text (for matching)
    main: bool                   # a request that offers tools (not a side request such as a title)


@dataclass
class Reply:
    text: str = ""
    tool: str | None = None      # call this tool (a name from Turn.tools) ...
    args: dict[str, Any] = field(default_factory=dict)  # ... with these arguments


Script = Callable[[Turn], Reply]


@dataclass
class Request:
    path: str
    body: Any
    t: float = field(default_factory=time.time)

    @property
    def text(self) -> str:
        return json.dumps(self.body, ensure_ascii=False)


class MockModel:
    def __init__(self, script: Script, max_requests: int = 60, max_seconds: float = 240.0) -> None:
        self.script, self.max_requests = script, max_requests
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._calls = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:  # noqa: N802 - model lists and the like
                owner._record(self.path, None)
                path = self.path.split("?")[0]
                if path.endswith("/models"):
                    self._json(200, {"object": "list", "data": [], "models": []})
                else:
                    self._json(404, {"error": {"message": "not scripted", "type": "not_found"}})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                if self.headers.get("content-encoding") == "zstd":
                    self._json(415, {"error": {"message": "zstd not supported"}})
                    return
                try:
                    body = json.loads(raw or b"null")
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                if not owner._record(self.path, body):
                    self._json(429, {"error": {"message": "mock model: request budget spent"}})
                    return
                path = self.path.split("?")[0]
                try:
                    if path.endswith("/messages/count_tokens"):
                        self._json(200, {"input_tokens": 100})
                    elif path.endswith("/messages"):
                        self._anthropic(body)
                    elif path.endswith("/responses"):
                        self._openai(body)
                    elif ":countTokens" in path:
                        self._json(200, {"totalTokens": 100})
                    elif ":streamGenerateContent" in path or ":generateContent" in path:
                        self._gemini(body, stream=":streamGenerateContent" in path)
                    else:
                        self._json(404, {"error": {"message": f"not scripted: {path}"}})
                except (BrokenPipeError, ConnectionResetError):
                    pass

            # --- plumbing ---------------------------------------------------------

            def _json(self, status: int, data: Any) -> None:
                out = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def _sse(self, events: list[tuple[str | None, Any]]) -> None:
                chunks = []
                for name, data in events:
                    head = f"event: {name}\n" if name else ""
                    chunks.append(f"{head}data: {json.dumps(data)}\n\n")
                out = "".join(chunks).encode()
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("content-length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            # --- Anthropic Messages ----------------------------------------------

            def _anthropic(self, body: dict[str, Any]) -> None:
                tools = [t.get("name", "") for t in body.get("tools") or []]
                results = []
                for m in body.get("messages") or []:
                    if isinstance(m.get("content"), list):
                        for part in m["content"]:
                            if part.get("type") == "tool_result":
                                results.append(json.dumps(part.get("content"), ensure_ascii=False))
                reply = owner.script(Turn("anthropic", tools, results, json.dumps(body), bool(tools)))
                model = body.get("model", "mock")
                msg = {"id": f"msg_{owner._calls}", "type": "message", "role": "assistant", "model": model,
                       "content": [], "stop_reason": None, "stop_sequence": None,
                       "usage": {"input_tokens": 10, "output_tokens": 1}}
                events: list[tuple[str | None, Any]] = [("message_start", {"type": "message_start", "message": msg})]
                if reply.text:
                    events += [
                        ("content_block_start", {"type": "content_block_start", "index": 0,
                                                 "content_block": {"type": "text", "text": ""}}),
                        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                 "delta": {"type": "text_delta", "text": reply.text}}),
                        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                    ]
                if reply.tool:
                    i = 1 if reply.text else 0
                    events += [
                        ("content_block_start", {"type": "content_block_start", "index": i, "content_block": {
                            "type": "tool_use", "id": f"toolu_{owner._calls}", "name": reply.tool, "input": {}}}),
                        ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {
                            "type": "input_json_delta", "partial_json": json.dumps(reply.args)}}),
                        ("content_block_stop", {"type": "content_block_stop", "index": i}),
                    ]
                stop = "tool_use" if reply.tool else "end_turn"
                events += [
                    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                       "usage": {"output_tokens": 5}}),
                    ("message_stop", {"type": "message_stop"}),
                ]
                if body.get("stream"):
                    self._sse(events)
                else:
                    content = ([{"type": "text", "text": reply.text}] if reply.text else []) + (
                        [{"type": "tool_use", "id": f"toolu_{owner._calls}", "name": reply.tool,
                          "input": reply.args}] if reply.tool else [])
                    self._json(200, {**msg, "content": content, "stop_reason": stop})

            # --- OpenAI Responses -------------------------------------------------

            def _openai(self, body: dict[str, Any]) -> None:
                tools = []
                for t in body.get("tools") or []:
                    if t.get("type") == "namespace":
                        tools += [f"{t.get('name')}{s.get('name')}" for s in t.get("tools") or []]
                    else:
                        tools.append(t.get("name") or t.get("type", ""))
                results = [json.dumps(item.get("output"), ensure_ascii=False) for item in body.get("input") or []
                           if isinstance(item, dict) and item.get("type", "").endswith("call_output")]
                reply = owner.script(Turn("openai", tools, results, json.dumps(body), bool(tools)))
                rid = f"resp_{owner._calls}"
                items = []
                if reply.text:
                    items.append({"type": "message", "id": f"msg_{owner._calls}", "role": "assistant",
                                  "status": "completed",
                                  "content": [{"type": "output_text", "text": reply.text, "annotations": []}]})
                if reply.tool:
                    items.append({"type": "function_call", "id": f"fc_{owner._calls}",
                                  "call_id": f"call_{owner._calls}", "name": reply.tool,
                                  "arguments": json.dumps(reply.args), "status": "completed"})
                events: list[tuple[str | None, Any]] = [
                    ("response.created", {"type": "response.created", "response": {"id": rid, "status": "in_progress"}})]
                for i, item in enumerate(items):
                    events.append(("response.output_item.added",
                                   {"type": "response.output_item.added", "output_index": i, "item": item}))
                    if item["type"] == "message":
                        events.append(("response.output_text.delta", {
                            "type": "response.output_text.delta", "output_index": i, "content_index": 0,
                            "item_id": item["id"], "delta": reply.text}))
                    events.append(("response.output_item.done",
                                   {"type": "response.output_item.done", "output_index": i, "item": item}))
                events.append(("response.completed", {"type": "response.completed", "response": {
                    "id": rid, "status": "completed", "output": items,
                    "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                              "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
                              "total_tokens": 15}}}))
                self._sse(events)

            # --- Gemini -----------------------------------------------------------

            def _gemini(self, body: dict[str, Any], stream: bool) -> None:
                tools = [d.get("name", "") for t in body.get("tools") or []
                         for d in t.get("functionDeclarations") or []]
                results = [json.dumps(p["functionResponse"], ensure_ascii=False)
                           for c in body.get("contents") or [] for p in c.get("parts") or []
                           if "functionResponse" in p]
                reply = owner.script(Turn("gemini", tools, results, json.dumps(body), bool(tools)))
                parts: list[dict[str, Any]] = []
                if reply.text:
                    parts.append({"text": reply.text})
                if reply.tool:
                    parts.append({"functionCall": {"name": reply.tool, "args": reply.args}})
                chunk = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP",
                                         "index": 0}],
                         "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
                         "modelVersion": "mock"}
                if stream:
                    self._sse([(None, chunk)])
                else:
                    self._json(200, chunk)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._deadline = time.monotonic() + max_seconds
        self._timer = threading.Timer(max_seconds, self.close)
        self._timer.daemon = True

    def _record(self, path: str, body: Any) -> bool:
        with self._lock:
            self._calls += 1
            if self._calls > self.max_requests or time.monotonic() > self._deadline:
                return False
            self.requests.append(Request(path, body))
            return True

    def __enter__(self) -> MockModel:
        self._thread.start()
        self._timer.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self._timer.cancel()
        self._server.shutdown()
        self._server.server_close()

    def model_requests(self) -> list[Request]:
        return [r for r in self.requests if r.body is not None]
