"""Real HTTP servers on loopback that speak the OpenAI chat-completions and Anthropic Messages
protocols, answering from a script of replies (text, status code, delay), for the LLM adapters."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    text: str = ""
    status: int = 200
    delay_s: float = 0.0
    raw: bytes | None = None  # sent as is (a malformed protocol reply)
    tool_calls: list[tuple[str, dict[str, Any]]] | None = None  # (tool name, arguments) the model asks for


class ChatServer:
    """Answers each POST with the next scripted reply (the last one repeats)."""

    def __init__(self, protocol: str) -> None:
        assert protocol in ("openai", "anthropic")
        self.protocol = protocol
        self.script: list[Reply] = [Reply("{}")]
        self.requests: list[dict[str, Any]] = []
        self.ignore_stream = False  # answer with one JSON document even when a stream is asked for
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # the model list (OpenAI's GET /models)
                outer.requests.append({"path": self.path, "headers": dict(self.headers), "body": None})
                raw = json.dumps(
                    {
                        "object": "list",
                        "data": [{"id": "loopback-model", "object": "model", "owned_by": "test"}],
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                reply = outer.script.pop(0) if len(outer.script) > 1 else outer.script[0]
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if (
                    body.get("stream")
                    and not outer.ignore_stream
                    and reply.status == 200
                    and reply.raw is None
                ):
                    events = outer._stream_events(reply, body)
                    raw_sse = "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode()
                    if outer.protocol == "openai":
                        raw_sse += b"data: [DONE]\n\n"
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Content-Length", str(len(raw_sse)))
                    self.end_headers()
                    self.wfile.write(raw_sse)
                    return
                raw = reply.raw if reply.raw is not None else json.dumps(outer._payload(reply, body)).encode()
                if reply.status != 200 and reply.raw is None:
                    raw = b'{"error": {"message": "scripted failure"}}'
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def _payload(self, reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
        prompt_tokens = sum(len(str(m["content"]).split()) for m in body.get("messages", []))
        calls = reply.tool_calls or []
        if self.protocol == "openai":
            message: dict[str, Any] = {"role": "assistant", "content": reply.text}
            if calls:
                message["tool_calls"] = [
                    {
                        "id": f"call_{i}",
                        "type": "function",
                        "function": {"name": n, "arguments": json.dumps(a)},
                    }
                    for i, (n, a) in enumerate(calls)
                ]
            return {
                "id": "chatcmpl-test",
                "model": body["model"],
                "choices": [{"index": 0, "message": message}],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(reply.text.split())},
            }
        blocks: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text else []
        blocks += [
            {"type": "tool_use", "id": f"toolu_{i}", "name": n, "input": a} for i, (n, a) in enumerate(calls)
        ]
        return {
            "id": "msg_test",
            "type": "message",
            "model": body["model"],
            "content": blocks,
            "usage": {"input_tokens": prompt_tokens, "output_tokens": len(reply.text.split())},
        }

    def _stream_events(self, reply: Reply, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The reply as the protocol's stream: text word by word, tool arguments in two pieces."""
        words = [w + " " for w in reply.text.split(" ")] if reply.text else []
        if words:
            words[-1] = words[-1].rstrip(" ")
        calls = reply.tool_calls or []
        if self.protocol == "openai":
            out: list[dict[str, Any]] = [
                {"model": body["model"], "choices": [{"index": 0, "delta": {"content": w}}]} for w in words
            ]
            for i, (name, args) in enumerate(calls):
                raw = json.dumps(args)
                half = len(raw) // 2
                first = {"index": i, "id": f"call_{i}", "function": {"name": name, "arguments": raw[:half]}}
                out.append(
                    {"model": body["model"], "choices": [{"index": 0, "delta": {"tool_calls": [first]}}]}
                )
                rest = {"index": i, "function": {"arguments": raw[half:]}}
                out.append(
                    {"model": body["model"], "choices": [{"index": 0, "delta": {"tool_calls": [rest]}}]}
                )
            out.append(
                {
                    "model": body["model"],
                    "choices": [],
                    "usage": {"prompt_tokens": 7, "completion_tokens": len(words)},
                }
            )
            return out
        out = [{"type": "message_start", "message": {"model": body["model"], "usage": {"input_tokens": 7}}}]
        if words:
            out.append(
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
            )
            out += [
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": w}}
                for w in words
            ]
            out.append({"type": "content_block_stop", "index": 0})
        for i, (name, args) in enumerate(calls, start=1):
            raw = json.dumps(args)
            half = len(raw) // 2
            block = {"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": {}}
            out.append({"type": "content_block_start", "index": i, "content_block": block})
            for piece in (raw[:half], raw[half:]):
                delta = {"type": "input_json_delta", "partial_json": piece}
                out.append({"type": "content_block_delta", "index": i, "delta": delta})
            out.append({"type": "content_block_stop", "index": i})
        out += [{"type": "message_delta", "usage": {"output_tokens": len(words)}}, {"type": "message_stop"}]
        return out

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
