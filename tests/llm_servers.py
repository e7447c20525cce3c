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
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                reply = outer.script.pop(0) if len(outer.script) > 1 else outer.script[0]
                if reply.delay_s:
                    time.sleep(reply.delay_s)
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

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
