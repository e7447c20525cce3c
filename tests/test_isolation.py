"""Isolation end to end, table-driven: every REST route, every MCP tool and every CLI command is
tried by an intruder against an owner's memory, for two pairs on each backend: two agents, and
two users of one agent (user-bound keys). Nothing of the owner's is read, listed, searched,
counted, exported, linked, superseded, deduplicated against or changed, and an owner's id answers
exactly as a missing id does (no 403-versus-404 signal). A route, tool or command added without
a row here fails the test."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.routing import APIRoute
from typer.testing import CliRunner

from nous import Nous, Settings
from nous.cli.app import app as cli_app
from nous.server import create_app, create_key
from tests.test_server import LiveServer, live

# Words only the owner's memories hold. The number stands alone: inside a timestamp, a float or a
# UUID ("…:41.974190", "…-7419-…") the same digits are chance, not a leak.
MARK = re.compile(r"zorblax|quillon|(?<![-\w.])7419(?![-\w])", re.IGNORECASE)
FACT = "The vault combination for Zorblax Industries is 7419"
DECISION = "Move the Zorblax ledger to the Quillon cluster"
TURN = "Remind me that the Zorblax launch is on Friday"
CONVERSATION = {
    "id": "c1",
    "sessions": [
        {
            "id": "s1",
            "started_at": "2026-03-01T10:00:00Z",
            "messages": [
                {"id": "m1", "role": "user", "content": "Our Zorblax offsite moved to Quillon in May."},
                {"id": "m2", "role": "assistant", "content": "Noted: Zorblax offsite in Quillon."},
            ],
        }
    ],
}
INTRUDER_CONVERSATION = {  # the same conversation and session ids, other words
    "id": "c1",
    "sessions": [
        {
            "id": "s1",
            "started_at": "2026-03-01T10:00:00Z",
            "messages": [{"id": "m1", "role": "user", "content": "Our team offsite is in Porto in June."}],
        }
    ],
}


# -- the REST table ----------------------------------------------------------------------------
@dataclass
class Ctx:
    """One pair's state: the owner's ids, the intruder's own fact, and which pair this is."""

    ids: dict[str, str]
    own_fact: str
    users: bool  # True: two users of one agent; False: two agents


Check = Callable[[httpx.Response, Ctx], None]
Request = tuple[str, str, Any]  # method, path, JSON body (bytes for a raw body)


def clean(response: httpx.Response, ctx: Ctx) -> None:
    """Answered, with nothing of the owner's in it."""
    assert response.status_code < 300, response.text
    text = response.text
    leak = MARK.search(text)
    assert leak is None, text[max(0, leak.start() - 1500) :][:2500]
    leaked = [name for name, i in ctx.ids.items() if i in text]
    assert not leaked, (leaked, text[max(0, text.find(ctx.ids[leaked[0]]) - 1500) :][:2500])


def hidden(response: httpx.Response, ctx: Ctx) -> None:
    """404, as for a missing id (compared with the answer for one by the caller)."""
    assert response.status_code == 404, response.text
    assert not MARK.search(response.text)


def denied(response: httpx.Response, ctx: Ctx) -> None:
    """A user-bound key asking for an agent-wide view: 403 whatever the owner has."""
    assert response.status_code == 403, response.text
    assert not MARK.search(response.text) and not any(i in response.text for i in ctx.ids.values())


def agent_view(response: httpx.Response, ctx: Ctx) -> None:
    (denied if ctx.users else clean)(response, ctx)


def not_a_duplicate(response: httpx.Response, ctx: Ctx) -> None:
    """The intruder's identical or changed text is stored as its own: no duplicate of, update
    to or contradiction with the owner's memory."""
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["status"] == "created" and not body.get("existing_id"), body
    assert not any(i in response.text for i in ctx.ids.values())


def stored_as_own(response: httpx.Response, ctx: Ctx) -> None:
    assert response.status_code == 201, response.text
    assert not any(i in response.text for i in ctx.ids.values()), response.text


def unique(response: httpx.Response, ctx: Ctx) -> None:
    clean(response, ctx)
    assert response.json()["recommendation"] == "unique", response.text


def allowed(response: httpx.Response, ctx: Ctx) -> None:
    clean(response, ctx)
    assert response.json()["decision"] == "allow", response.text  # the owner's censor is not B's


def ingested_anew(response: httpx.Response, ctx: Ctx) -> None:
    clean(response, ctx)
    report = response.json()
    assert report["sessions"] == 1 and report["sessions_skipped"] == 0, report


def queued(response: httpx.Response, ctx: Ctx) -> None:
    assert response.status_code == 202, response.text
    clean(response, ctx)


def zero_stats(response: httpx.Response, ctx: Ctx) -> None:
    agent_view(response, ctx)
    if not ctx.users:
        counts = response.json()["active_by_kind"]
        assert counts.get("decision", 0) == 0 and counts.get("procedure", 0) == 0, counts  # none of A's


ROUTES: dict[tuple[str, str], Callable[[Ctx], list[tuple[Request, Check]]]] = {
    ("POST", "/v1/memories"): lambda c: [
        (("POST", "/v1/memories", {"type": "fact", "content": FACT}), not_a_duplicate),
        (  # close to the intruder's own copy just stored, never to the owner's
            ("POST", "/v1/memories", {"type": "fact", "content": FACT.replace("7419", "9999")}),
            stored_as_own,
        ),
    ],
    ("GET", "/v1/memories"): lambda c: [(("GET", "/v1/memories?limit=1000", None), clean)],
    ("GET", "/v1/memories/{memory_id}"): lambda c: [(("GET", "/v1/memories/{fact}", None), hidden)],
    ("PATCH", "/v1/memories/{memory_id}"): lambda c: [
        (("PATCH", "/v1/memories/{fact}", {"tags": ["stolen"]}), hidden)
    ],
    ("DELETE", "/v1/memories/{memory_id}"): lambda c: [(("DELETE", "/v1/memories/{fact}", None), hidden)],
    ("POST", "/v1/recall"): lambda c: [
        (("POST", "/v1/recall", {"query": "what is the vault combination?", "limit": 50}), clean)
    ],
    ("POST", "/v1/memories/{memory_id}/restore"): lambda c: [
        (("POST", "/v1/memories/{fact}/restore", None), hidden)
    ],
    ("GET", "/v1/memories/{memory_id}/history"): lambda c: [
        (("GET", "/v1/memories/{fact}/history", None), hidden)
    ],
    ("POST", "/v1/memories/check-similar"): lambda c: [
        (("POST", "/v1/memories/check-similar", {"content": "Where is the ledger moving?"}), unique)
    ],
    ("POST", "/v1/recall/recent"): lambda c: [
        (("POST", "/v1/recall/recent", {"types": ["fact", "turn", "episode", "decision"]}), clean)
    ],
    ("POST", "/v1/sessions/{session_id}/turns"): lambda c: [
        (("POST", "/v1/sessions/secret-session/turns", {"text": "When is the launch?"}), clean)
    ],
    ("POST", "/v1/sessions/{session_id}/reply"): lambda c: [
        (("POST", "/v1/sessions/secret-session/reply", {"reply": "I do not know yet."}), clean)
    ],
    ("POST", "/v1/sessions/{session_id}/end"): lambda c: [
        (("POST", "/v1/sessions/secret-session/end", {}), clean)
    ],
    ("POST", "/v1/preview"): lambda c: [
        (("POST", "/v1/preview", {"text": "What is the vault combination?"}), clean),
        (("POST", "/v1/preview", {"text": "When is the launch?", "session_id": "secret-session"}), clean),
    ],
    ("POST", "/v1/check-action"): lambda c: [
        (("POST", "/v1/check-action", {"action": "wipe the vault now"}), allowed)
    ],
    ("GET", "/v1/stats"): lambda c: [(("GET", "/v1/stats", None), zero_stats)],
    ("GET", "/v1/events"): lambda c: [(("GET", "/v1/events?limit=1000", None), agent_view)],
    ("POST", "/v1/decisions/{decision_id}/review"): lambda c: [
        (("POST", "/v1/decisions/{decision}/review", {"outcome": "failure"}), hidden)
    ],
    ("GET", "/v1/calibration"): lambda c: [(("GET", "/v1/calibration", None), agent_view)],
    ("GET", "/v1/proposals"): lambda c: [(("GET", "/v1/proposals", None), agent_view)],
    ("POST", "/v1/proposals/{decision_id}/{verdict}"): lambda c: [
        (("POST", "/v1/proposals/{decision}/accept", None), denied if c.users else hidden)
    ],
    ("POST", "/v1/procedures/{procedure_id}/use"): lambda c: [
        (("POST", "/v1/procedures/{procedure}/use", {"success": False}), hidden)
    ],
    ("GET", "/v1/censors"): lambda c: [(("GET", "/v1/censors", None), clean)],
    ("PATCH", "/v1/censors/{censor_id}"): lambda c: [
        (("PATCH", "/v1/censors/{censor}", {"action": "warn"}), hidden)
    ],
    ("POST", "/v1/censors/{censor_id}/false-positive"): lambda c: [
        (("POST", "/v1/censors/{censor}/false-positive", {}), hidden)
    ],
    ("POST", "/v1/censors/{censor_id}/retire"): lambda c: [
        (("POST", "/v1/censors/{censor}/retire", {}), hidden)
    ],
    ("POST", "/v1/memories/{memory_id}/links"): lambda c: [
        (("POST", "/v1/memories/{fact}/links", {"target_id": c.own_fact}), hidden),
        (("POST", f"/v1/memories/{c.own_fact}/links", {"target_id": "{fact}"}), hidden),
    ],
    ("GET", "/v1/memories/{memory_id}/links"): lambda c: [
        (("GET", "/v1/memories/{fact}/links", None), hidden),
        (("GET", f"/v1/memories/{c.own_fact}/links", None), clean),
    ],
    ("POST", "/v1/memories/{memory_id}/supersede"): lambda c: [
        (("POST", "/v1/memories/{fact}/supersede", {"by": c.own_fact}), hidden),
        (("POST", f"/v1/memories/{c.own_fact}/supersede", {"by": "{fact}"}), hidden),
    ],
    ("GET", "/v1/identity"): lambda c: [(("GET", "/v1/identity", None), agent_view)],
    ("PUT", "/v1/identity/{section}"): lambda c: [
        (("PUT", "/v1/identity/character", {"content": "A cheerful helper."}), agent_view)
    ],
    ("GET", "/v1/sessions/{session_id}/working-memory"): lambda c: [
        (("GET", "/v1/sessions/owner-session/working-memory", None), hidden)
    ],
    ("POST", "/v1/ingest"): lambda c: [
        (("POST", "/v1/ingest?wait=true", INTRUDER_CONVERSATION), ingested_anew),
        (("POST", "/v1/ingest", INTRUDER_CONVERSATION), queued),
    ],
    ("GET", "/v1/jobs/{job_id}"): lambda c: [(("GET", "/v1/jobs/{job}", None), hidden)],
    ("GET", "/v1/threads"): lambda c: [
        (("GET", "/v1/threads?limit=1000", None), clean),
        (("GET", "/v1/threads?query=when+is+the+launch%3F", None), clean),
    ],
    ("GET", "/v1/threads/{thread_id}"): lambda c: [(("GET", "/v1/threads/{thread}", None), hidden)],
    ("GET", "/v1/export"): lambda c: [(("GET", "/v1/export", None), agent_view)],
    ("POST", "/v1/import"): lambda c: [(("POST", "/v1/import", "{import}"), agent_view)],
    ("POST", "/v1/decisions"): lambda c: [
        (("POST", "/v1/decisions", {"content": DECISION, "episode_id": "{episode}"}), hidden),
        (("POST", "/v1/decisions", {"content": "Keep the Porto ledger", "stakes": "high"}), stored_as_own),
    ],
    ("GET", "/v1/decisions"): lambda c: [(("GET", "/v1/decisions?limit=1000", None), clean)],
    ("GET", "/v1/decisions/{decision_id}"): lambda c: [(("GET", "/v1/decisions/{decision}", None), hidden)],
    ("POST", "/v1/episodes"): lambda c: [
        (("POST", "/v1/episodes", {"title": "Porto planning"}), stored_as_own)
    ],
    ("GET", "/v1/episodes"): lambda c: [(("GET", "/v1/episodes?limit=1000", None), clean)],
    ("GET", "/v1/episodes/{episode_id}"): lambda c: [(("GET", "/v1/episodes/{episode}", None), hidden)],
    ("POST", "/v1/episodes/{episode_id}/end"): lambda c: [
        (("POST", "/v1/episodes/{episode}/end", {"summary": "stolen"}), hidden)
    ],
    ("GET", "/v1/sessions"): lambda c: [(("GET", "/v1/sessions?limit=1000", None), clean)],
    ("GET", "/v1/sessions/{session_id}"): lambda c: [(("GET", "/v1/sessions/owner-session", None), hidden)],
    # another agent erases its own "alice" (nothing of the owner's); a user-bound key erases no one
    ("DELETE", "/v1/users/{user_id}"): lambda c: [(("DELETE", "/v1/users/alice", None), agent_view)],
}
NOT_AGENT_DATA = {("GET", "/health")}  # no key, no memory


# The inspector's pages (/ui/), tried with the intruder's key and a valid CSRF token of its own.
UI_PAGES: dict[tuple[str, str], Callable[[Ctx], list[tuple[Request, Check]]]] = {
    ("GET", "/ui/"): lambda c: [(("GET", "/ui/", None), clean)],
    ("GET", "/ui/memories"): lambda c: [
        (("GET", "/ui/memories", None), clean),
        (("GET", "/ui/memories?q=what+is+the+vault+combination%3F", None), clean),
    ],
    ("GET", "/ui/memories/{memory_id}"): lambda c: [(("GET", "/ui/memories/{fact}", None), hidden)],
    ("POST", "/ui/memories/{memory_id}/edit"): lambda c: [
        (("POST", "/ui/memories/{fact}/edit", {"content": "stolen", "tags": ""}), hidden)
    ],
    ("POST", "/ui/memories/{memory_id}/forget"): lambda c: [
        (("POST", "/ui/memories/{fact}/forget", {}), hidden)
    ],
    ("POST", "/ui/memories/{memory_id}/restore"): lambda c: [
        (("POST", "/ui/memories/{fact}/restore", {}), hidden)
    ],
    ("GET", "/ui/context"): lambda c: [(("GET", "/ui/context?text=When+is+the+launch%3F", None), clean)],
    ("GET", "/ui/decisions"): lambda c: [(("GET", "/ui/decisions", None), clean)],
    ("POST", "/ui/proposals/{decision_id}/{verdict}"): lambda c: [
        (("POST", "/ui/proposals/{decision}/accept", {}), denied if c.users else hidden)
    ],
    ("GET", "/ui/sessions"): lambda c: [(("GET", "/ui/sessions", None), clean)],
    ("GET", "/ui/sessions/{session_id}"): lambda c: [(("GET", "/ui/sessions/owner-session", None), hidden)],
    ("GET", "/ui/health"): lambda c: [(("GET", "/ui/health", None), agent_view)],
    ("GET", "/ui/threads"): lambda c: [
        (("GET", "/ui/threads", None), clean),
        (("GET", "/ui/threads?q=the+launch+on+Friday", None), clean),
    ],
    ("GET", "/ui/threads/{thread_id}"): lambda c: [(("GET", "/ui/threads/{thread}", None), hidden)],
    ("POST", "/ui/memories/{memory_id}/link"): lambda c: [
        (("POST", "/ui/memories/{fact}/link", {"target": c.own_fact}), hidden),
        (("POST", f"/ui/memories/{c.own_fact}/link", {"target": "{fact}"}), hidden),
    ],
    ("POST", "/ui/memories/{memory_id}/supersede"): lambda c: [
        (("POST", "/ui/memories/{fact}/supersede", {"by": c.own_fact}), hidden),
        (("POST", f"/ui/memories/{c.own_fact}/supersede", {"by": "{fact}"}), hidden),
    ],
    ("GET", "/ui/censors"): lambda c: [(("GET", "/ui/censors", None), clean)],
    ("POST", "/ui/censors/{censor_id}/{action}"): lambda c: [
        (("POST", "/ui/censors/{censor}/edit", {"action": "warn", "trigger_pattern": "x"}), hidden),
        (("POST", "/ui/censors/{censor}/false-positive", {"note": "stolen"}), hidden),
        (("POST", "/ui/censors/{censor}/retire", {}), hidden),
    ],
    ("POST", "/ui/events/{event_id}/retry"): lambda c: [
        (("POST", "/ui/events/{event}/retry", {}), denied if c.users else hidden)
    ],
}
UI_NOT_AGENT_DATA = {
    ("GET", "/"),
    ("GET", "/ui"),
    ("GET", "/ui/login"),
    ("POST", "/ui/login"),
    ("POST", "/ui/logout"),
}


def _ui_routes(app: Any) -> set[tuple[str, str]]:
    """The inspector's routes (not in the OpenAPI document)."""
    return {
        (method, route.path)
        for route in app.routes
        if isinstance(route, APIRoute) and (route.path == "/" or route.path.startswith("/ui"))
        for method in (route.methods or set()) - {"HEAD"}
    }


def _probe_ui(intruder: httpx.Client, ctx: Ctx, fill: dict[str, str], missing: dict[str, str]) -> None:
    """Every inspector page tried by the intruder: what REST hides, the page hides too."""
    page = intruder.get(f"/ui/memories/{ctx.own_fact}")
    token = re.search(r'name="csrf" value="([0-9a-f]+)"', page.text)
    assert token, page.text
    for probes in UI_PAGES.values():
        for (method, path, body), check in probes(ctx):
            sent = None if body is None else {"csrf": token.group(1), **body}
            answer = intruder.request(method, _fill(path, fill), data=sent)
            check(answer, ctx)
            if check is hidden:  # the owner's id answers as a missing one does
                twin = intruder.request(method, _fill(path, missing), data=sent)
                got = answer.text
                for name in ctx.ids:
                    got = got.replace(ctx.ids[name], missing[name])
                assert (answer.status_code, got) == (twin.status_code, twin.text), (method, path)


def _fill(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str):
        for name, i in ids.items():
            value = value.replace("{" + name + "}", i)
        return value
    if isinstance(value, dict):
        return {k: _fill(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, ids) for v in value]
    return value


def _send(client: httpx.Client, request: Request, ids: dict[str, str]) -> httpx.Response:
    method, path, body = request
    path = _fill(path, ids)
    if isinstance(body, bytes):
        return client.request(method, path, content=body)
    return client.request(method, path, json=_fill(body, ids))


async def _keys(settings: Settings) -> dict[str, str]:
    async with Nous(settings) as nous:
        keys = {}
        for name, kw in {
            "a": {"agent_id": "agent-a"},
            "b": {"agent_id": "agent-b"},
            "alice": {"agent_id": "agent-a", "user_id": "alice"},
            "bob": {"agent_id": "agent-a", "user_id": "bob"},
        }.items():
            keys[name] = (await create_key(nous.store, **kw))[1]  # type: ignore[arg-type]
        return keys


@pytest.fixture
def served(database_url: str, settings: Settings) -> Iterator[tuple[LiveServer, dict[str, str]]]:
    with live(settings.model_copy(update={"database_url": database_url}), _keys) as pair:
        yield pair


def _client(server: LiveServer, key: str) -> httpx.Client:
    return httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=120)


def _plant(owner: httpx.Client, *, users: bool, settings: Settings) -> dict[str, str]:
    """The owner's memory of every kind it may write; its ids by name."""

    def create(body: dict[str, Any]) -> str:
        answer = owner.post("/v1/memories", json=body)
        assert answer.status_code == 201, answer.text
        return str(answer.json()["id"])

    ids = {
        "fact": create({"type": "fact", "content": FACT, "session_id": "owner-session"}),
        "decision": create({"type": "decision", "content": DECISION, "confidence": 0.7}),
    }
    episode = owner.post("/v1/episodes", json={"title": "Zorblax launch planning"})
    assert episode.status_code == 201, episode.text
    ids["episode"] = episode.json()["id"]
    assert owner.post("/v1/sessions/owner-session/turns", json={"text": TURN}).status_code == 200
    assert (
        owner.post("/v1/sessions/owner-session/reply", json={"reply": "Zorblax: Friday."}).status_code == 200
    )
    assert owner.post("/v1/sessions/secret-session/turns", json={"text": TURN}).status_code == 200
    assert owner.post("/v1/ingest?wait=true", json=CONVERSATION).json()["sessions"] == 1
    queued_job = owner.post("/v1/ingest", json=CONVERSATION)  # a job (no worker runs it here)
    assert queued_job.status_code == 202, queued_job.text
    ids["job"] = queued_job.json()["id"]
    if users:  # a user-bound key has no agent-wide organs; the intruder tries the owner's fact
        ids["procedure"] = ids["censor"] = ids["fact"]
    else:
        ids["procedure"] = create({"type": "procedure", "name": "Zorblax rollout", "content": "Tag Quillon"})
        ids["censor"] = create(
            {"type": "censor", "content": r"wipe\s+the\s+vault", "action": "block", "reason": "Zorblax"}
        )
        assert owner.put("/v1/identity/character", json={"content": "Keeper of Zorblax"}).status_code == 200
    # an event of the owner's (an agent's key lists them; a user-bound one has no event view)
    ids["event"] = ids["fact"] if users else owner.get("/v1/events").json()["items"][0]["id"]
    ids["thread"] = _owners_thread(owner, settings)
    return ids


def _owners_thread(owner: httpx.Client, settings: Settings) -> str:
    """A topic thread of the owner's: the store's threads built now (no worker runs here), and
    the first the owner's key lists."""

    async def build() -> None:
        async with Nous(settings, agent_id="agent-a") as nous:
            await nous.build_threads()

    asyncio.run(build())
    found = owner.get("/v1/threads").json()["items"]
    assert found, "the owner has no thread"
    return str(found[0]["id"])


def _snapshot(owner: httpx.Client, ids: dict[str, str], agent: httpx.Client) -> dict[str, Any]:
    """What the intruder must not change: the owner's memories, session and its agent's identity
    (read with the agent's key: a user-bound key is refused it)."""
    memories = {
        name: owner.get(f"/v1/memories/{i}").json()
        for name, i in ids.items()
        if name not in ("job", "event", "thread")
    }
    for memory in memories.values():
        for volatile in ("last_accessed_at", "access_count", "stability", "retrievability"):
            memory.pop(volatile, None)
    session = owner.get("/v1/sessions/owner-session/working-memory").json()
    session.pop("updated_at")  # an empty working memory is made afresh on each read
    return {
        "memories": memories,
        "session": session,
        "identity": agent.get("/v1/identity").json(),
        "recall": [h["id"] for h in owner.post("/v1/recall", json={"query": FACT}).json()["results"]][:1],
    }


@pytest.mark.parametrize("pair", ["agents", "users"])
def test_every_route_keeps_the_owners_memory_from_the_intruder(
    served: tuple[LiveServer, dict[str, str]], pair: str
) -> None:
    server, keys = served
    spec = create_app(server.settings).openapi()
    routes = {(m.upper(), p) for p, ops in spec["paths"].items() for m in ops}
    assert routes - NOT_AGENT_DATA == set(ROUTES), "a route without an isolation row"
    assert _ui_routes(create_app(server.settings)) - UI_NOT_AGENT_DATA == set(UI_PAGES), (
        "a page without a row"
    )
    owner_key, intruder_key = (keys["alice"], keys["bob"]) if pair == "users" else (keys["a"], keys["b"])
    with (
        _client(server, owner_key) as owner,
        _client(server, intruder_key) as intruder,
        _client(server, keys["a"]) as agent,
    ):
        ids = _plant(owner, users=pair == "users", settings=server.settings)
        before = _snapshot(owner, ids, agent)
        assert before["recall"] == [ids["fact"]]
        own = intruder.post("/v1/memories", json={"type": "fact", "content": "Porto has good coffee"})
        ctx = Ctx(ids=ids, own_fact=own.json()["id"], users=pair == "users")
        forged = json.dumps(  # an import naming the owner's fact id must neither fail on nor touch it
            {"memory": {"kind": "fact", "id": ids["fact"], "agent_id": "agent-b", "content": "Porto fact"}}
        )
        fill = {**ids, "import": forged}
        fresh = {i: str(uuid.uuid4()) for i in set(ids.values())}
        missing = {name: fresh[i] for name, i in ids.items()}
        _probe_ui(intruder, ctx, fill, missing)  # before the intruder stores copies of the owner's words
        last = ("POST", "/v1/memories")  # the intruder's copies of the owner's words go in last
        for method, path in sorted(ROUTES, key=lambda route: route == last):
            probes = ROUTES[(method, path)]
            for request, check in probes(ctx):
                if request[2] == "{import}":
                    request = (request[0], request[1], forged.encode())
                answer = _send(intruder, request, fill)
                check(answer, ctx)
                if check is hidden:  # the owner's id answers as a missing one does
                    # each answer has its own request id; the rest is the same
                    twin = {**_send(intruder, request, missing).json(), "request_id": None}
                    got = {**answer.json(), "request_id": None}
                    for name in ids:
                        got["detail"] = got["detail"].replace(ids[name], missing[name])
                    assert got == twin, (method, path, got, twin)
        after = _snapshot(owner, ids, agent)
        for key in before:
            assert after[key] == before[key], (key, before[key], after[key])
        if pair == "users":  # the agent's own key still sees its user's memory
            with _client(server, keys["a"]) as agent:
                assert agent.get(f"/v1/memories/{ids['fact']}").status_code == 200


# -- the MCP table -----------------------------------------------------------------------------
def _mcp_text(result: Any) -> str:
    return json.dumps(result.structured_content) + " ".join(getattr(c, "text", "") for c in result.content)


MCP_TOOLS: dict[str, tuple[dict[str, Any], str]] = {  # tool -> (arguments, expectation), in order
    "recall": ({"query": "what is the vault combination?", "limit": 50}, "clean"),
    "recall_recent": ({"limit": 100, "hours": 48}, "clean"),
    "timeline": ({"topic": "when is the launch?", "threads": 5}, "clean"),
    "record_decision": ({"description": "Use the Porto venue", "confidence": 0.6}, "clean"),
    "check_similar": ({"content": "Where is the ledger moving?"}, "unique"),
    "check_action": ({"action": "wipe the vault now"}, "allow"),
    "context": ({"session_id": "secret-session", "user_text": "When is the launch?"}, "clean"),
    "reply": ({"session_id": "secret-session", "text": "Noted.", "fact_ids": ["{fact}"]}, "error"),
    "end_session": ({"session_id": "owner-session"}, "error"),  # the owner's session is not found
    "create_censor": ({"pattern": "wipe the vault", "reason": "Porto rule"}, "agent-only"),
    "forget": ({"memory_id": "{fact}"}, "error"),
    "remember": ({"content": FACT}, "created"),  # last: the intruder's own copy of the owner's words
}


@pytest.mark.parametrize("pair", ["agents", "users"])
async def test_every_mcp_tool_keeps_the_owners_memory_from_the_intruder(
    served: tuple[LiveServer, dict[str, str]], pair: str
) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    server, keys = served
    owner_key, intruder_key = (keys["alice"], keys["bob"]) if pair == "users" else (keys["a"], keys["b"])
    with _client(server, owner_key) as owner, _client(server, keys["a"]) as agent:
        ids = await asyncio.to_thread(_plant, owner, users=pair == "users", settings=server.settings)
        before = await asyncio.to_thread(_snapshot, owner, ids, agent)
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {intruder_key}"}, timeout=120)
    async with Client(streamable_http_client(f"{server.url}/mcp/", http_client=http)) as intruder:
        assert {t.name for t in (await intruder.list_tools()).tools} == set(MCP_TOOLS)
        for tool, (arguments, expect) in MCP_TOOLS.items():
            if expect == "agent-only":  # the agent's shared memory: refused to a user-bound key
                expect = "error" if pair == "users" else "created"
            result = await intruder.call_tool(tool, _fill(arguments, ids))
            text = _mcp_text(result)
            if expect == "error":  # the owner's id fails exactly as a missing one does
                other = str(uuid.uuid4())
                twin = await intruder.call_tool(tool, _fill(arguments, {"fact": other}))
                assert result.is_error and twin.is_error, (tool, text)
                assert text.replace(ids["fact"], "ID") == _mcp_text(twin).replace(other, "ID")
                continue
            assert not any(i in text for i in ids.values()), (tool, text)
            assert not result.is_error, (tool, text)
            data = result.structured_content
            data = data.get("result", data) if isinstance(data, dict) else data
            if expect == "created":
                assert data["status"] == "created" and not data["existing_id"], data
            else:
                assert not MARK.search(text), (tool, text)
                if expect == "unique":
                    assert data["recommendation"] == "unique", data
                if expect == "allow":
                    assert data["decision"] == "allow", data
    with _client(server, owner_key) as owner, _client(server, keys["a"]) as agent:
        assert await asyncio.to_thread(_snapshot, owner, ids, agent) == before


# -- the CLI table -----------------------------------------------------------------------------
NOT_AGENT_SCOPED = {  # command -> why the table has no intruder row for it
    "bench agent": "a benchmark on fresh stores of its own",
    "bench censor-stall": "a benchmark on fresh stores of its own",
    "bench censors": "a benchmark on fresh stores of its own (labelled censor actions)",
    "bench cold-start": "a benchmark on a store of its own (made, or given with --store), served by its own server",
    "bench context": "a benchmark on fresh stores of its own",
    "bench crash": "a benchmark on fresh stores of its own",
    "bench dedup": "a benchmark on fresh stores of its own",
    "bench frames": "a benchmark of the frame selector on labelled messages; it opens no store",
    "bench extraction": "a benchmark on fresh stores of its own",
    "bench load": "a benchmark on fresh stores of its own",
    "bench locomo": "a benchmark on fresh stores of its own",
    "bench retrieval": "a benchmark on fresh stores of its own",
    "bench scale": "a benchmark on fresh stores of its own",
    "keys": "the operator's key list (ids, agents, names; never a secret or memory)",
    "keys create": "the operator creates a key",
    "keys revoke": "the operator revokes a key",
    "serve": "long-running; its routes are the REST table above",
    "mcp": "long-running stdio; its tools are the MCP table above",
    "mcp config": "prints an MCP client's configuration; opens no store",
    "chat": "interactive with a language model; its turn loop is context/reply below",
    "demo": "loads the sample into its own demo agent",
    "init": "creates or migrates the store; reads no memory",
    "doctor": "checks the store and model; prints no memory",
}


def _cli_rows(ids: dict[str, str], tmp: Path) -> dict[str, tuple[list[str], str]]:
    """command -> (the intruder's arguments, expectation: clean | hidden | created)."""
    conversation = tmp / "intruder.json"
    conversation.write_text(json.dumps(INTRUDER_CONVERSATION))
    forged = tmp / "forged.jsonl"
    forged.write_text(
        json.dumps({"memory": {"kind": "fact", "id": ids["fact"], "agent_id": "agent-b", "content": "Porto"}})
    )
    out = tmp / "export.jsonl"
    return {
        "learn": (["learn", FACT, "--json"], "created"),
        "recall": (["recall", "what is the vault combination?", "--limit", "50"], "clean"),
        "decide": (["decide", "Use the Porto venue", "--confidence", "0.6"], "clean"),
        "facts": (["facts", "--limit", "500"], "clean"),
        "decisions": (["decisions"], "clean"),
        "episodes": (["episodes"], "clean"),
        "show": (["show", ids["fact"]], "hidden"),
        "history": (["history", ids["fact"]], "hidden"),
        "forget": (["forget", ids["fact"]], "hidden"),
        "check-similar": (["check-similar", "Where is the ledger moving?"], "clean"),
        "check-action": (["check-action", "wipe the vault now", "--json"], "allow"),
        "ingest": (["ingest", str(conversation)], "clean"),
        "recent": (["recent", "--limit", "100"], "clean"),
        "context": (["context", "When is the launch?", "--session", "secret-session"], "clean"),
        "reply": (["reply", "--session", "secret-session", "I do not know yet."], "clean"),
        "end-session": (["end-session", "secret-session"], "clean"),
        "sessions": (["sessions"], "clean"),
        "threads": (["threads", "--limit", "1000"], "clean"),
        "thread": (["thread", ids["thread"]], "hidden"),
        "working-memory": (["working-memory", "owner-session"], "clean"),  # empty, as for a missing one
        "calibration": (["calibration"], "clean"),
        "review": (["review", ids["decision"], "--outcome", "failure"], "hidden"),
        "stats": (["stats"], "clean"),
        "export": (["export", "-o", str(out)], "clean"),
        "import": (["import", str(forged)], "clean"),
        "maintain": (["maintain", "--events"], "clean"),
        "worker": (["worker", "--once"], "clean"),
        "bench fill": (["bench", "fill", "--n", "5"], "clean"),  # writes its own agent's only
        "events": (["events"], "clean"),
        "events retry": (["events", "retry", ids["event"]], "hidden"),
        "proposals": (["proposals"], "clean"),
        "proposals accept": (["proposals", "accept", ids["decision"]], "hidden"),
        "proposals reject": (["proposals", "reject", ids["decision"]], "hidden"),
        "procedures": (["procedures"], "clean"),
        "procedures add": (["procedures", "add", "Porto trip", "Book the train"], "clean"),
        "procedures use": (["procedures", "use", ids["procedure"]], "hidden"),
        "censors": (["censors"], "clean"),
        "censors add": (["censors", "add", r"rm\s+-rf", "--action", "warn"], "clean"),
        "censors edit": (["censors", "edit", ids["censor"], "--action", "warn"], "hidden"),
        "censors false-positive": (["censors", "false-positive", ids["censor"]], "hidden"),
        "censors retire": (["censors", "retire", ids["censor"]], "hidden"),
        "identity": (["identity"], "clean"),
        "identity set": (["identity", "set", "character", "A cheerful helper"], "clean"),
        "identity history": (["identity", "history", "character"], "clean"),
    }


def _commands() -> set[str]:
    import typer

    root = typer.main.get_command(cli_app)
    found: set[str] = set()

    def walk(command: Any, prefix: str) -> None:
        subs = getattr(command, "commands", None) or {}
        for name, sub in subs.items():
            walk(sub, f"{prefix} {name}".strip())
        if prefix and (not subs or getattr(command, "invoke_without_command", False)):
            found.add(prefix)

    walk(root, "")
    return found


def test_every_cli_command_with_another_agent_sees_nothing_of_the_owners(
    cli: CliRunner, database_url: str, tmp_path: Path
) -> None:
    def run(agent: str, args: list[str]) -> Any:
        return cli.invoke(cli_app, ["--db", database_url, "--agent", agent, *args])

    learned = json.loads(run("agent-a", ["learn", FACT, "--json"]).stdout)
    ids = {"fact": learned["id"]}
    ids["decision"] = json.loads(
        run("agent-a", ["decide", DECISION, "--confidence", "0.7", "--json"]).stdout
    )["id"]
    ids["procedure"] = json.loads(
        run("agent-a", ["procedures", "add", "Zorblax rollout", "Tag Quillon", "--json"]).stdout
    )["id"]
    ids["censor"] = json.loads(
        run("agent-a", ["censors", "add", r"wipe\s+the\s+vault", "--action", "block", "--json"]).stdout
    )["id"]
    for args in (
        ["context", TURN, "--session", "owner-session"],
        ["reply", "--session", "owner-session", "Zorblax: Friday."],
        ["context", TURN, "--session", "secret-session"],
        ["identity", "set", "character", "Keeper of Zorblax"],
    ):
        assert run("agent-a", args).exit_code == 0, args
    conversation = tmp_path / "owner.json"
    conversation.write_text(json.dumps(CONVERSATION))
    assert run("agent-a", ["ingest", str(conversation)]).exit_code == 0
    before = run("agent-a", ["export", "-o", str(tmp_path / "before.jsonl")])
    assert before.exit_code == 0
    ids["event"] = json.loads(run("agent-a", ["events", "--json"]).stdout)[0]["id"]
    assert run("agent-a", ["maintain"]).exit_code == 0  # builds the owner's topic threads
    ids["thread"] = json.loads(run("agent-a", ["threads", "--json"]).stdout)[0]["id"]
    rows = _cli_rows(ids, tmp_path)
    assert _commands() - set(NOT_AGENT_SCOPED) == set(rows), "a command without an isolation row"
    for name, (args, expect) in sorted(rows.items(), key=lambda row: row[0] == "learn"):
        result = run("agent-b", args)
        output = result.stdout + result.stderr
        assert not MARK.search(output) or expect == "created", (name, output)
        assert not any(i in output for i in ids.values()) or expect == "hidden", (name, output)
        if expect == "hidden":
            assert result.exit_code == 2 and "no " in output.lower(), (name, output)
            twin = run("agent-b", [a if a not in ids.values() else str(uuid.uuid4()) for a in args])
            assert twin.exit_code == 2, (name, twin.stdout + twin.stderr)
        else:
            assert result.exit_code == 0, (name, output)
        if expect == "created":
            assert json.loads(result.stdout)["status"] == "created", output
        if expect == "allow":
            assert json.loads(result.stdout)["decision"] == "allow", output
    exported = (tmp_path / "export.jsonl").read_text()
    assert not MARK.search(exported)
    after = run("agent-a", ["export", "-o", str(tmp_path / "after.jsonl")])
    assert after.exit_code == 0
    owner_before = _owned_records(tmp_path / "before.jsonl", ids)
    assert _owned_records(tmp_path / "after.jsonl", ids) == owner_before


def _owned_records(path: Path, ids: dict[str, str]) -> dict[str, dict[str, Any]]:
    """The owner's planted memories in an export, without what reading them changes."""
    records = {}
    for line in path.read_text().splitlines()[1:]:
        memory = json.loads(line).get("memory")
        if memory and memory["id"] in ids.values():
            for volatile in ("last_accessed_at", "access_count", "stability", "retrievability"):
                memory.pop(volatile, None)
            records[memory["id"]] = memory
    return records


# -- key handling ------------------------------------------------------------------------------
def test_keys_are_hashed_at_rest_refused_once_revoked_and_never_logged(
    database_url: str, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    import psycopg

    from nous.server import revoke_key

    run = settings.model_copy(update={"database_url": database_url})
    caplog.set_level(logging.DEBUG)
    with live(run, _keys) as (server, keys), _client(server, keys["a"]) as a:
        assert a.post("/v1/memories", json={"type": "fact", "content": "Keys stay secret"}).status_code == 201
        assert a.post("/v1/memories", json={"type": "nonsense"}).status_code == 422
        assert a.get("/v1/memories/not-a-real-id").status_code == 404
        for bad in (keys["a"][:-2] + "zz", keys["a"] + "x", "Bearer " + keys["a"]):
            with _client(server, bad) as wrong:
                assert wrong.get("/v1/stats").status_code == 401

        async def revoke() -> None:
            async with Nous(run) as nous:
                key_id = keys["b"].split("_")[1]
                assert await revoke_key(nous.store, key_id)

        with _client(server, keys["b"]) as b:
            assert b.get("/v1/stats").status_code == 200
            asyncio.run(revoke())
            assert b.get("/v1/stats").status_code == 401  # the very next request
    secrets = [k.split("_", 2)[2] for k in keys.values()]
    logged = "\n".join(f"{r.getMessage()} {r.exc_text or ''}" for r in caplog.records)
    assert not any(s in logged or k in logged for s, k in zip(secrets, keys.values(), strict=True))
    if database_url.startswith("sqlite"):  # at rest: the hash only, in every column of every row
        import sqlite3

        with sqlite3.connect(database_url.removeprefix("sqlite:///")) as conn:
            rows = [str(r) for r in conn.execute("SELECT * FROM api_keys")]
    else:
        from tests.conftest import PG_URL

        schema = database_url.split("nous_schema=")[1]
        with psycopg.connect(PG_URL) as pg:
            rows = [str(r) for r in pg.execute(f"SELECT * FROM {schema}.api_keys")]
    assert len(rows) == len(keys)
    assert not any(s in row for s in secrets for row in rows)
    import hashlib

    hashes = {hashlib.sha256(s.encode()).hexdigest() for s in secrets}
    assert sum(any(h in row for h in hashes) for row in rows) == len(keys)
