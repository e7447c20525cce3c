"""A real OpenAI-compatible embeddings server on loopback, backed by the real local model."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from nous import Settings
from nous.embeddings.base import EmbeddingProvider


class FakeOpenAI:
    """A real HTTP server on loopback speaking the OpenAI embeddings protocol, backed by the real model."""

    def __init__(self, provider: EmbeddingProvider) -> None:
        self.provider = provider
        self.failing = False
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
                if outer.failing:
                    self.send_response(503)
                    self.end_headers()
                    self.wfile.write(b"overloaded")
                    return
                vectors = outer.provider.embed(body["input"])
                payload = {
                    "data": [{"index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)][::-1]
                }
                raw = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def openai_settings(server: FakeOpenAI, tmp_path: Path) -> Settings:
    return Settings(
        home=tmp_path,
        embedding_provider="openai",
        embedding_model="mini",
        embedding_api_base=server.url,
        embedding_api_key="sk-test",
        embedding_batch_size=2,
        events_worker="off",  # no background sweep of this test's back-dated sessions
    )
