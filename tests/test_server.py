"""The REST API against a real `nous serve` app on loopback (uvicorn in a thread), both backends:
keys, isolation between agents and users, problem details, the memory and recall contract."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from typer.testing import CliRunner

from nous import Nous, Settings
from nous.cli.app import app as cli_app
from nous.models.events import EventStatus
from nous.server import create_app, create_key, revoke_key
from tests.waiting import BOUND_S, eventually

PROBLEM = "application/problem+json"


class LiveServer:
    """The app served by uvicorn on an ephemeral loopback port, in a thread of its own."""

    def __init__(self, settings: Settings, *, auth: bool = True, http: Any = "auto") -> None:
        self.settings = settings
        config = uvicorn.Config(
            create_app(settings, auth=auth), host="127.0.0.1", port=0, log_level="warning", http=http
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + BOUND_S
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the server did not start")
            time.sleep(0.05)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


async def _keys(settings: Settings) -> dict[str, str]:
    async with Nous(settings) as nous:
        keys = {}
        for name, kw in {
            "a": {"agent_id": "agent-a"},
            "a_user": {"agent_id": "agent-a", "user_id": "alice"},
            "b": {"agent_id": "agent-b"},
            "admin": {"agent_id": None, "admin": True},
            "revoked": {"agent_id": "agent-a"},
        }.items():
            key, token = await create_key(nous.store, **kw)  # type: ignore[arg-type]
            keys[name] = token
            if name == "revoked":
                await revoke_key(nous.store, key.id)
        return keys


@contextmanager
def live(
    run: Settings, make_keys: Callable[[Settings], Coroutine[Any, Any, dict[str, str]]], **server: Any
) -> Iterator[tuple[LiveServer, dict[str, str]]]:
    """Keys made by ``make_keys`` in the store ``run`` names, and the app serving it."""
    keys = asyncio.run(make_keys(run))
    live_server = LiveServer(run, **server)
    try:
        yield live_server, keys
    finally:
        live_server.close()


@pytest.fixture
def served(database_url: str, settings: Settings) -> Iterator[tuple[LiveServer, dict[str, str]]]:
    with live(settings.model_copy(update={"database_url": database_url}), _keys) as pair:
        yield pair


def _client(server: LiveServer, key: str | None = None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.Client(base_url=server.url, headers=headers, timeout=60)


def _is_problem(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(PROBLEM)
    body = response.json()
    assert body["status"] == status and body["title"] and body["detail"]
    return body


def test_health_needs_no_key_and_everything_else_does(served: tuple[LiveServer, dict[str, str]]) -> None:
    server, keys = served
    with _client(server) as anonymous:
        health = anonymous.get("/health")
        assert health.status_code == 200 and health.json()["status"] == "ok"
        assert anonymous.get("/openapi.json").json()["info"]["title"] == "Nous"
        _is_problem(anonymous.post("/v1/recall", json={"query": "anything"}), 401)
    tampered = keys["a"][:-1] + ("A" if keys["a"][-1] != "A" else "B")  # one character of the secret changed
    for bad in ("nous_000000000000_" + "x" * 43, tampered, "not-a-key", keys["revoked"]):
        with _client(server, bad) as client:
            _is_problem(client.post("/v1/recall", json={"query": "anything"}), 401)
    with _client(server, keys["admin"]) as admin:
        _is_problem(admin.post("/v1/recall", json={"query": "anything"}), 403)


def test_memories_and_recall_follow_the_contract_and_stay_with_their_agent(
    served: tuple[LiveServer, dict[str, str]],
) -> None:
    server, keys = served
    with (
        _client(server, keys["a"]) as a,
        _client(server, keys["b"]) as b,
        _client(server, keys["a_user"]) as alice,
    ):
        created = a.post(
            "/v1/memories", json={"type": "fact", "content": "The staging cluster runs in eu-west-1"}
        )
        assert created.status_code == 201, created.text
        fact = created.json()
        assert fact["status"] == "created" and fact["type"] == "fact" and fact["id"]
        again = a.post(
            "/v1/memories", json={"type": "fact", "content": "The staging cluster runs in eu-west-1"}
        )
        assert again.status_code == 201 and again.json()["status"] == "duplicate"
        assert again.json()["existing_id"] == fact["id"]
        got = a.get(f"/v1/memories/{fact['id']}")
        assert got.status_code == 200 and got.json()["content"] == "The staging cluster runs in eu-west-1"
        hits = a.post("/v1/recall", json={"query": "where does staging run?", "limit": 3}).json()["results"]
        assert hits and hits[0]["id"] == fact["id"] and {"id", "type", "content", "score"} <= hits[0].keys()
        assert 0 < hits[0]["score"] <= 1 and hits[0]["current"] is True and hits[0]["occurred_at"]
        above = a.post("/v1/recall", json={"query": "where does staging run?", "min_score": 1.0}).json()
        assert above["results"] == []  # nothing is certain
        # Agent B: another agent's id is exactly a missing id, and its recall never sees A's memory.
        theirs = _is_problem(b.get(f"/v1/memories/{fact['id']}"), 404)
        missing = _is_problem(b.get("/v1/memories/00000000-0000-4000-8000-000000000000"), 404)
        assert theirs.keys() == missing.keys() and "eu-west" not in json.dumps(theirs)
        assert b.post("/v1/recall", json={"query": "where does staging run?"}).json()["results"] == []
        b_fact = b.post(
            "/v1/memories", json={"type": "fact", "content": "The staging cluster runs in eu-west-1"}
        )
        assert b_fact.json()["status"] == "created"  # A's copy is not B's duplicate
        # A user-bound key: its user's memories and the agent's shared ones, nobody else's.
        private = a.post(
            "/v1/memories",
            json={"type": "fact", "content": "Bob's salary review is in March", "user_id": "bob"},
        ).json()
        _is_problem(alice.get(f"/v1/memories/{private['id']}"), 404)
        assert alice.get(f"/v1/memories/{fact['id']}").status_code == 200  # shared
        own = alice.post("/v1/memories", json={"type": "fact", "content": "Alice prefers morning standups"})
        assert own.json()["memory"]["user_id"] == "alice"
        _is_problem(
            alice.post("/v1/memories", json={"type": "fact", "content": "x y z", "user_id": "bob"}), 403
        )
        recalled = alice.post("/v1/recall", json={"query": "salary review", "limit": 10}).json()["results"]
        assert private["id"] not in {h["id"] for h in recalled}
        decision = a.post(
            "/v1/memories",
            json={"type": "decision", "content": "Use Kafka for billing events", "confidence": 0.8},
        )
        assert decision.status_code == 201 and decision.json()["type"] == "decision"


def test_bad_requests_are_problem_details_never_500(served: tuple[LiveServer, dict[str, str]]) -> None:
    server, keys = served
    with _client(server, keys["a"]) as a:
        raw = a.post("/v1/memories", content=b"{not json", headers={"content-type": "application/json"})
        _is_problem(raw, 422)
        _is_problem(a.post("/v1/memories", json={"type": "fact"}), 422)
        _is_problem(a.post("/v1/memories", json={"type": "poem", "content": "x"}), 422)
        _is_problem(a.post("/v1/memories", json={"type": "fact", "content": "x", "confidence": "high"}), 422)
        _is_problem(a.post("/v1/memories", json={"type": "fact", "content": "   "}), 422)
        _is_problem(a.post("/v1/memories", json={"type": "fact", "content": "ok", "surprise": 1}), 422)
        _is_problem(a.post("/v1/recall", json={"query": "x", "limit": 0}), 422)
        _is_problem(a.post("/v1/recall", json={"query": "x", "preset": "no-such-preset"}), 422)
        _is_problem(a.post("/v1/recall", json={"query": "x", "min_score": 2}), 422)
        # a time is an ISO 8601 string: neither a number nor a string of digits (read as 1970)
        for when in (0, "0", "1700000000", "yesterday"):
            body = {"content": "Use Postgres", "occurred_at": when}
            assert "ISO 8601" in _is_problem(a.post("/v1/decisions", json=body), 422)["detail"], when
        _is_problem(a.get("/v1/memories", params={"since": "0"}), 422)
        fine = a.post(
            "/v1/decisions", json={"content": "Use Postgres", "occurred_at": "2026-03-02T09:15:00Z"}
        )
        assert fine.status_code == 201, fine.text
        _is_problem(
            a.post("/v1/memories", content=b"x" * 4_100_000, headers={"content-type": "application/json"}),
            413,
        )
        _is_problem(a.get("/v1/no-such-route"), 404)


def test_keys_cli_prints_the_key_alone_on_its_last_line(cli: CliRunner, tmp_path: Path) -> None:
    created = cli.invoke(cli_app, ["keys", "create", "--agent", "bot"])
    assert created.exit_code == 0, created.output
    token = created.stdout.strip().splitlines()[-1]
    assert token.startswith("nous_") and " " not in token
    listed = json.loads(cli.invoke(cli_app, ["keys", "--json"]).stdout)
    assert [(k["agent_id"], k["revoked_at"]) for k in listed] == [("bot", None)]
    assert token not in cli.invoke(cli_app, ["keys"]).stdout  # never shown again
    assert cli.invoke(cli_app, ["keys", "revoke", token]).exit_code == 0
    assert json.loads(cli.invoke(cli_app, ["keys", "--json"]).stdout)[0]["revoked_at"] is not None
    bad = cli.invoke(cli_app, ["keys", "create"])
    assert bad.exit_code == 2 and "agent" in bad.stderr
    refused = cli.invoke(cli_app, ["serve", "--host", "0.0.0.0", "--no-auth"])
    assert refused.exit_code == 2 and "loopback" in refused.stderr


def test_every_route_of_agent_a_is_closed_to_agent_b(served: tuple[LiveServer, dict[str, str]]) -> None:
    """One table over the memory routes: B's key never reads, updates, forgets, restores or sees
    the history of A's memory (404, as for a missing id), and B's searches never return it."""
    server, keys = served
    with _client(server, keys["a"]) as a, _client(server, keys["b"]) as b:
        fact = a.post("/v1/memories", json={"type": "fact", "content": "Invoices are archived for ten years"})
        mid = fact.json()["id"]
        routes: list[tuple[str, str, dict[str, Any] | None]] = [
            ("GET", f"/v1/memories/{mid}", None),
            ("PATCH", f"/v1/memories/{mid}", {"tags": ["stolen"]}),
            ("DELETE", f"/v1/memories/{mid}", None),
            ("POST", f"/v1/memories/{mid}/restore", None),
            ("GET", f"/v1/memories/{mid}/history", None),
        ]
        for method, path, body in routes:
            _is_problem(b.request(method, path, json=body), 404)
        searches: list[tuple[str, str, dict[str, Any] | None]] = [
            ("POST", "/v1/recall", {"query": "how long are invoices archived?"}),
            ("GET", "/v1/memories", None),
            ("POST", "/v1/recall/recent", {"types": ["fact"], "hours": 24}),
            ("POST", "/v1/memories/check-similar", {"content": "Invoices are archived for ten years"}),
            ("POST", "/v1/sessions/b1/turns", {"text": "How long are invoices archived?"}),
            ("GET", "/v1/stats", None),
            ("GET", "/v1/events", None),
        ]
        for method, path, body in searches:
            answer = b.request(method, path, json=body)
            assert answer.status_code == 200, (path, answer.text)
            assert "archived for ten years" not in answer.text and mid not in answer.text, path
        assert a.get(f"/v1/memories/{mid}").json()["tags"] == []  # untouched by B


def test_the_memory_life_and_turn_loop_routes(served: tuple[LiveServer, dict[str, str]]) -> None:
    server, keys = served
    with _client(server, keys["a"]) as a:
        mid = a.post(
            "/v1/memories", json={"type": "fact", "content": "The API rate limit is 100 per minute"}
        ).json()["id"]
        assert a.patch(f"/v1/memories/{mid}", json={"tags": ["limits"]}).json()["tags"] == ["limits"]
        similar = a.post(
            "/v1/memories/check-similar", json={"content": "The API rate limit is 100 per minute"}
        )
        assert similar.json()["recommendation"] == "duplicate_found"
        assert a.delete(f"/v1/memories/{mid}").json()["active"] is False
        assert a.post(f"/v1/memories/{mid}/restore").json()["active"] is True
        actions = [h["action"] for h in a.get(f"/v1/memories/{mid}/history").json()]
        assert actions[0] == "create" and {"update", "delete", "restore"} <= set(actions)
        for i in range(3):
            a.post("/v1/memories", json={"type": "fact", "content": f"Service {i} runs on port {8000 + i}"})
        first = a.get("/v1/memories", params={"limit": 2}).json()
        second = a.get("/v1/memories", params={"limit": 2, "cursor": first["next_cursor"]}).json()
        assert len(first["items"]) == 2 and first["next_cursor"] and len(second["items"]) == 2
        assert not {m["id"] for m in first["items"]} & {m["id"] for m in second["items"]}
        _is_problem(a.get("/v1/memories", params={"cursor": "bogus"}), 422)
        turn = a.post("/v1/sessions/s1/turns", json={"text": "What is the API rate limit?"}).json()
        assert turn["frame"] and turn["tokens"] <= turn["budget"] and "100 per minute" in turn["context"]
        state = a.post(
            "/v1/sessions/s1/reply",
            json={"reply": "It is 100 requests per minute.", "tools_used": ["recall"]},
        )
        assert state.json()["turn_count"] == 1 and state.json()["tools_used"] == ["recall"]
        ended = a.post("/v1/sessions/s1/end", json={}).json()
        assert ended["session"]["ended_at"] and ended["ended_now"] is True
        _is_problem(a.post("/v1/sessions/nope/end", json={}), 404)
        a.post(
            "/v1/memories",
            json={"type": "censor", "content": r"DROP\s+TABLE", "action": "block", "reason": "prod"},
        )
        verdict = a.post("/v1/check-action", json={"action": "DROP TABLE users"}).json()
        assert verdict["decision"] == "block" and verdict["matches"]
        stats = a.get("/v1/stats").json()
        assert stats["active_by_kind"]["fact"] >= 4 and "pending" in stats["events"]
        assert a.get("/v1/events", params={"status": "pending"}).status_code == 200
        _is_problem(a.get("/v1/events", params={"status": "finished"}), 422)


async def test_the_python_client_speaks_like_the_engine(served: tuple[LiveServer, dict[str, str]]) -> None:
    from nous import AsyncClient, AuthenticationError, Client, InvalidInputError, NotFoundError
    from nous.models import Fact, WriteStatus

    server, keys = served
    async with AsyncClient(server.url, key=keys["a"]) as a, AsyncClient(server.url, key=keys["b"]) as b:
        first = await a.learn("The on-call rotation changes every Monday at 09:00")
        assert first.status == WriteStatus.CREATED and isinstance(first.memory, Fact)
        again = await a.learn("The on-call rotation changes every Monday at 09:00")
        assert again.status == WriteStatus.DUPLICATE and again.existing_id == first.memory.id
        hits = await a.recall("when does on-call change?", limit=3)
        assert hits[0].id == first.memory.id and isinstance(hits[0].memory, Fact) and hits[0].score > 0
        assert (await a.update(first.memory.id, tags=["oncall"])).tags == ["oncall"]
        assert (await a.get(first.memory.id)).content.startswith("The on-call rotation")
        with pytest.raises(NotFoundError):
            await b.get(first.memory.id)
        with pytest.raises(InvalidInputError):
            await a.learn("   ")
        context = await a.pre_turn("c1", "When does the on-call rotation change?")
        assert "Monday" in context.text and context.turn == 1
        assert (await a.post_turn("c1", "Every Monday at 09:00.")).turn_count == 1
        assert (await a.end_session("c1")).ended_now is True
        assert (await a.forget(first.memory.id)).active is False
    async with AsyncClient(server.url, key="nous_000000000000_" + "x" * 43) as stranger:
        with pytest.raises(AuthenticationError):
            await stranger.recall("anything")
    with Client(server.url, key=keys["b"]) as sync:
        assert sync.learn("Backups are kept for 35 days").status == WriteStatus.CREATED
        assert [m.content for m in sync.memories("fact")] == ["Backups are kept for 35 days"]


def test_metrics_count_requests_for_key_holders_only(served: tuple[LiveServer, dict[str, str]]) -> None:
    server, keys = served
    with (
        _client(server, keys["a"]) as a,
        _client(server) as anonymous,
        _client(server, keys["admin"]) as admin,
    ):
        a.post("/v1/recall", json={"query": "anything"})
        a.post("/v1/memories", json={"type": "fact", "content": "The metrics page counts outbox events"})
        _is_problem(anonymous.get("/metrics"), 401)
        text = admin.get("/metrics").text
        assert 'nous_requests_total{method="POST",route="/v1/recall",status="200"} 1' in text
        assert "nous_request_seconds_total" in text
        # The store's outbox, whichever process answers: one gauge per status; the fact's event
        # is among them (pending, running or done).
        outbox = {
            line.split('"')[1]: int(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith("nous_events{")
        }
        assert set(outbox) == {s.value for s in EventStatus}
        assert sum(outbox.values()) >= 1


def test_the_server_runs_each_agents_events(database_url: str, settings: Settings) -> None:
    run = settings.model_copy(
        update={"database_url": database_url, "events_worker": "in-process", "event_poll_seconds": 0.05}
    )
    keys = asyncio.run(_keys(run))
    server = LiveServer(run)
    try:
        with _client(server, keys["b"]) as b:  # not the server's default agent
            b.post(
                "/v1/memories", json={"type": "fact", "content": "The release train leaves every Thursday"}
            )

            def all_done() -> bool:
                events = b.get("/v1/events").json()["items"]
                return bool(events) and all(e["status"] == "done" for e in events)

            assert eventually(all_done)
    finally:
        server.close()


def test_organ_routes_and_their_isolation(served: tuple[LiveServer, dict[str, str]]) -> None:
    server, keys = served
    with _client(server, keys["a"]) as a, _client(server, keys["b"]) as b:
        decision = a.post(
            "/v1/memories", json={"type": "decision", "content": "Adopt Kafka", "confidence": 0.7}
        ).json()
        reviewed = a.post(
            f"/v1/decisions/{decision['id']}/review", json={"outcome": "success", "note": "worked"}
        )
        assert reviewed.json()["outcome"] == "success"
        _is_problem(b.post(f"/v1/decisions/{decision['id']}/review", json={"outcome": "failure"}), 404)
        assert a.get("/v1/calibration").json()["overall"]["resolved"] == 1
        assert b.get("/v1/calibration").json()["overall"]["resolved"] == 0
        assert a.get("/v1/proposals").json() == {"items": [], "next_cursor": None}
        procedure = a.post(
            "/v1/memories",
            json={"type": "procedure", "name": "Deploy", "content": "Run migrations, then roll out"},
        ).json()
        used = a.post(f"/v1/procedures/{procedure['id']}/use", json={"success": True}).json()
        assert used["activation_count"] == 1 and used["success_count"] == 1
        _is_problem(b.post(f"/v1/procedures/{procedure['id']}/use", json={}), 404)
        censor = a.post(
            "/v1/memories",
            json={"type": "censor", "content": r"rm\s+-rf", "action": "warn", "reason": "destructive"},
        ).json()
        assert [c["id"] for c in a.get("/v1/censors").json()["items"]] == [censor["id"]]
        assert b.get("/v1/censors").json()["items"] == []
        assert a.patch(f"/v1/censors/{censor['id']}", json={"action": "block"}).json()["action"] == "block"
        assert (
            a.post(f"/v1/censors/{censor['id']}/false-positive", json={}).json()["false_positive_count"] == 1
        )
        _is_problem(b.post(f"/v1/censors/{censor['id']}/retire", json={}), 404)
        assert (
            a.post(f"/v1/censors/{censor['id']}/retire", json={"note": "obsolete"}).json()["active"] is False
        )
        fact = a.post(
            "/v1/memories", json={"type": "fact", "content": "Kafka runs three brokers in eu-west-1"}
        ).json()
        assert a.post(f"/v1/memories/{fact['id']}/links", json={"target_id": decision["id"]}).json() == {
            "created": True
        }
        b_fact = b.post("/v1/memories", json={"type": "fact", "content": "B's own note about brokers"}).json()
        _is_problem(b.post(f"/v1/memories/{b_fact['id']}/links", json={"target_id": decision["id"]}), 404)
        assert (
            a.put(
                "/v1/identity/character", json={"content": "A careful infrastructure engineer."}
            ).status_code
            == 200
        )
        assert [s["section"] for s in a.get("/v1/identity").json()] == ["character"]
        assert b.get("/v1/identity").json() == []
        a.post("/v1/sessions/w1/turns", json={"text": "Help me plan the Kafka migration"})
        assert a.get("/v1/sessions/w1/working-memory").json()["session_id"] == "w1"
        _is_problem(b.get("/v1/sessions/w1/working-memory"), 404)
        conversation = {
            "sessions": [
                {
                    "id": "s1",
                    "started_at": "2026-03-01T10:00:00Z",
                    "messages": [
                        {
                            "id": "m1",
                            "role": "user",
                            "content": "We moved the team offsite to Lisbon in May.",
                        },
                        {
                            "id": "m2",
                            "role": "assistant",
                            "content": "Noted: the offsite is in Lisbon in May.",
                        },
                    ],
                }
            ]
        }
        report = a.post("/v1/ingest?wait=true", json=conversation).json()
        assert report["turns"] == 2 and report["sessions"] == 1
        _is_problem(a.post("/v1/ingest", json={"sessions": "nope"}), 422)  # checked before it is accepted
        exported = a.get("/v1/export")
        assert exported.status_code == 200 and exported.headers["content-type"].startswith(
            "application/x-ndjson"
        )
        lines = exported.text.strip().splitlines()
        assert len(lines) > 5 and "Lisbon" in exported.text
        imported = b.post("/v1/import", content=exported.content).json()
        in_file = len(lines) - 1 - sum('"edge"' in line for line in lines[1:])
        assert imported == {"imported": in_file, "already_present": 0}
        again = b.post("/v1/import", content=exported.content).json()
        assert again == {"imported": 0, "already_present": in_file}
        assert any(
            "Lisbon" in h["content"]
            for h in b.post("/v1/recall", json={"query": "where is the offsite?"}).json()["results"]
        )
        _is_problem(b.post("/v1/import", content=b'{"broken": '), 422)
    with _client(server, keys["a_user"]) as alice:
        _is_problem(alice.get("/v1/export"), 403)  # agent-wide: the agent's key only


def test_the_first_command_serves_sample_data_with_a_fresh_key(tmp_path: Path) -> None:
    """`nous serve --demo` (what scripts/serve.sh runs) on an empty home: sample data, a key
    printed once, and the key works."""
    import os
    import re
    import socket
    import subprocess
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOUS_")}
    env |= {"NOUS_HOME": str(tmp_path / "home"), "NOUS_EVENTS_WORKER": "off", "COLUMNS": "400"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "nous", "serve", "--demo", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        output = ""
        while "MCP:" not in output:
            line = proc.stdout.readline()
            assert line, output
            output += line
        (key,) = re.findall(
            r"nous_[0-9a-f]{12}_[A-Za-z0-9_-]{43}", output.split("shown once")[1].split("\n")[0]
        )
        assert "/docs" in output and "curl" in output
        url = f"http://127.0.0.1:{port}"
        for _ in range(200):
            try:
                if httpx.get(f"{url}/health").status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        answer = httpx.post(
            f"{url}/v1/recall",
            json={"query": "what did we decide?"},
            headers={"Authorization": f"Bearer {key}"},
        )
        assert answer.status_code == 200 and answer.json()["results"]  # the sample data is there
    finally:
        proc.terminate()
        proc.wait(timeout=30)


async def test_mcp_over_http_inside_serve_speaks_for_the_keys_agent(
    served: tuple[LiveServer, dict[str, str]],
) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    server, keys = served

    def connect(key: str | None) -> Client:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        http = httpx2.AsyncClient(headers=headers, timeout=60)  # the MCP SDK's own httpx
        return Client(streamable_http_client(f"{server.url}/mcp/", http_client=http))

    async with connect(keys["a"]) as a:
        tools = {t.name for t in (await a.list_tools()).tools}
        assert {"remember", "recall", "context", "check_action"} <= tools
        stored = await a.call_tool("remember", {"content": "The MCP endpoint lives at /mcp/"})
        assert not stored.is_error
    async with connect(keys["b"]) as b:
        found = await b.call_tool("recall", {"query": "where does the MCP endpoint live?"})
        assert not found.is_error and "/mcp/" not in json.dumps(found.structured_content)
    with _client(server, keys["a"]) as rest:  # what A stored over MCP is A's memory
        hits = rest.post("/v1/recall", json={"query": "where does the MCP endpoint live?"}).json()["results"]
        assert hits and hits[0]["content"] == "The MCP endpoint lives at /mcp/"
    with _client(server) as anonymous:
        _is_problem(anonymous.post("/mcp/", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}), 401)
    with _client(server, keys["admin"]) as admin:
        _is_problem(admin.post("/mcp/", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}), 401)


def test_shutdown_finishes_the_write_in_flight(served: tuple[LiveServer, dict[str, str]]) -> None:
    """Asked to stop while an ingest is being written, the server finishes it: the client gets
    its answer and every turn is stored."""
    server, keys = served
    messages = [
        {
            "id": f"m{i}",
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"Message {i} about the Kafka migration plan, step {i}.",
        }
        for i in range(400)
    ]
    conversation = {"sessions": [{"id": "s1", "started_at": "2026-03-01T10:00:00Z", "messages": messages}]}
    answer: dict[str, Any] = {}

    def send() -> None:
        with _client(server, keys["a"]) as a:
            answer["response"] = a.post("/v1/ingest?wait=true", json=conversation)

    in_flight = server.server.server_state.tasks  # the requests the server is handling
    sender = threading.Thread(target=send)
    sender.start()
    # asked to stop once the server is handling the ingest (however long it takes to arrive)
    assert eventually(lambda: bool(in_flight) or "response" in answer)
    server.server.should_exit = True
    sender.join(timeout=120)
    server.thread.join(timeout=120)
    response = answer["response"]
    assert response.status_code == 200 and response.json()["turns"] == 400

    async def count() -> int:
        settings = server.settings
        async with Nous(settings, agent_id="agent-a") as nous:
            return len(await nous.memories("turn", limit=1000))

    assert asyncio.run(count()) == 400
