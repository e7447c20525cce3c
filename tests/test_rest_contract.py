"""The REST contract a typed client is written from, against a real `nous serve` app on loopback:
the OpenAPI document (security scheme, operationIds, typed bodies, closed vocabularies), one
problem-details vocabulary, Location and Allow headers, offline docs pages, and the decision,
episode and session routes with every field the Python API takes."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlparse

import httpx
import pytest

from nous import Settings
from nous.cognitive.frames import FRAMES
from nous.heart.identity import SECTION_BUDGETS
from nous.retrieval.weights import PRESETS
from nous.server import create_app
from nous.server.problems import TITLES
from nous.server.schemas import FrameName, IdentitySectionName, PresetName
from tests.test_server import PROBLEM, LiveServer, _client, _keys, live


@pytest.fixture
def served(database_url: str, settings: Settings) -> Iterator[tuple[LiveServer, dict[str, str]]]:
    with live(settings.model_copy(update={"database_url": database_url}), _keys) as pair:
        yield pair


def _problem(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(PROBLEM)
    body = response.json()
    assert body["status"] == status and body["title"] == TITLES[status] and body["detail"], body
    return body


def _resolve(spec: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        schema = spec["components"]["schemas"][name]
    return schema


def _enum_of(spec: dict[str, Any], schema: dict[str, Any]) -> set[str]:
    """The closed values a (possibly nullable, array or referenced) schema allows."""
    schema = _resolve(spec, schema)
    if "enum" in schema:
        return set(schema["enum"])
    if "const" in schema:
        return {schema["const"]}
    if schema.get("type") == "array":
        return _enum_of(spec, schema["items"])
    for option in schema.get("anyOf", []):
        if _resolve(spec, option).get("type") != "null":
            return _enum_of(spec, option)
    return set()


def _pydantic_bounds(node: Any, in_properties: bool = False) -> set[str]:
    """Keys ge, le, gt, lt anywhere in a schema, except as property names (a metadata filter's
    operators are properties ``gt``, ``lt`` ...)."""
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("ge", "le", "gt", "lt") and not in_properties:
                found.add(key)
            found |= _pydantic_bounds(value, key == "properties" and not in_properties)
    elif isinstance(node, list):
        for value in node:
            found |= _pydantic_bounds(value)
    return found


def test_the_openapi_document_is_a_complete_typed_contract(settings: Settings) -> None:
    spec = create_app(settings).openapi()
    schemes = spec["components"]["securitySchemes"]
    assert {"type": "http", "scheme": "bearer"}.items() <= schemes["apiKey"].items()
    schemas = spec["components"]["schemas"]
    ids = []
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            ids.append(operation["operationId"])
            assert re.fullmatch(r"[a-z][A-Za-z]+", operation["operationId"]), operation["operationId"]
            if path.startswith("/v1/"):
                assert operation["security"] == [{"apiKey": []}], (method, path)
            success = [s for s in operation["responses"] if s.startswith("2")]
            assert success, (method, path)
            for status, answer in operation["responses"].items():
                content = answer.get("content", {})
                if status.startswith(("4", "5")):
                    assert list(content) == [PROBLEM], (method, path, status)
                    assert content[PROBLEM]["schema"] == {"$ref": "#/components/schemas/ProblemDetail"}
                elif "application/json" in content:
                    schema = content["application/json"]["schema"]
                    target = schema["items"] if schema.get("type") == "array" else schema
                    assert "$ref" in target, (method, path, schema)  # a named model, never a bare object
                    assert target["$ref"].rsplit("/", 1)[1] in schemas
                else:
                    assert list(content) == ["application/x-ndjson"], (method, path)  # the export
                if status in ("201", "202"):  # created, or accepted as a job: where to find it
                    assert "Location" in answer["headers"], (method, path)
    assert len(ids) == len(set(ids))  # unique
    assert not _pydantic_bounds(spec)  # bounds as JSON Schema's minimum / maximum
    assert len(spec["paths"]["/v1/memories"]["post"]["responses"]["201"]["links"]) > 5  # kept beside Location
    assert {"recall", "listMemories", "createDecision", "startEpisode", "listSessions"} <= set(ids)

    def parameter(path: str, method: str, name: str) -> dict[str, Any]:
        found = [p for p in spec["paths"][path][method]["parameters"] if p["name"] == name]
        return dict(found[0]["schema"])

    def body_field(model: str, name: str) -> dict[str, Any]:
        return dict(schemas[model]["properties"][name])

    kinds = {"fact", "episode", "procedure", "censor", "decision", "turn"}
    assert _enum_of(spec, parameter("/v1/memories", "get", "type")) == kinds
    assert _enum_of(spec, body_field("RecallRequest", "types")) == kinds
    assert _enum_of(spec, body_field("RecallRequest", "frame")) == set(FRAMES) == {f.value for f in FrameName}
    assert (
        _enum_of(spec, body_field("RecallRequest", "preset")) == set(PRESETS) == {p.value for p in PresetName}
    )
    sections = {s.value for s in IdentitySectionName}
    assert (
        _enum_of(spec, parameter("/v1/identity/{section}", "put", "section"))
        == set(SECTION_BUDGETS)
        == sections
    )
    assert _enum_of(spec, parameter("/v1/events", "get", "status")) == {"pending", "running", "done", "dead"}
    assert _enum_of(spec, body_field("CreateMemory", "action")) == {"warn", "block", "absolute"}
    assert _enum_of(spec, body_field("CensorEdit", "action")) == {"warn", "block", "absolute"}
    assert _enum_of(spec, body_field("CreateDecision", "stakes")) == {"low", "medium", "high", "critical"}
    assert "architecture" in _enum_of(spec, body_field("CreateDecision", "category"))
    assert _enum_of(spec, body_field("ReviewRequest", "outcome")) == {
        "success",
        "partial",
        "failure",
        "pending",
    }
    assert "analysis" in _enum_of(spec, body_field("ReasonIn", "type"))
    assert _enum_of(spec, body_field("EndEpisode", "outcome")) >= {"success", "abandoned"}


def test_the_route_table_in_docs_rest_md_is_the_served_one(settings: Settings) -> None:
    """docs/rest.md's table (what a typed client is written from) lists exactly the operations."""
    spec = create_app(settings).openapi()
    served = {(m.upper(), p, o["operationId"]) for p, ops in spec["paths"].items() for m, o in ops.items()}
    text = (Path(__file__).parents[1] / "docs" / "rest.md").read_text()
    documented = set(re.findall(r"^\| (GET|POST|PUT|PATCH|DELETE) \| `([^`]+)` \| `(\w+)` \|", text, re.M))
    assert documented == served


def test_docs_pages_work_offline(served: tuple[LiveServer, dict[str, str]]) -> None:
    server, _ = served
    with _client(server) as anonymous:
        for page in ("/docs", "/redoc"):
            html = anonymous.get(page)
            assert html.status_code == 200 and "text/html" in html.headers["content-type"]
            urls = re.findall(r"""(?:src|href|url)\s*[:=]\s*['"]([^'"]+)['"]""", html.text)
            absolute = re.findall(r"https?://[^\s'\"<>)]+", html.text)
            assert not [u for u in absolute if urlparse(u).hostname not in ("127.0.0.1", "localhost")], (
                absolute
            )
            assets = [u for u in urls if u.startswith("/")]
            assert any(u.endswith(".js") for u in assets), urls
            for url in assets:
                assert anonymous.get(urljoin(server.url, url)).status_code == 200, url


def test_one_problem_vocabulary_and_the_headers_rest_promises(
    served: tuple[LiveServer, dict[str, str]],
) -> None:
    server, keys = served
    with _client(server, keys["a"]) as a, _client(server) as anonymous:
        _problem(anonymous.get("/v1/memories"), 401)
        _problem(a.get("/v1/no-such-route"), 404)
        not_json = a.post(
            "/v1/recall",
            content=b'{"query": "x"}',
            headers={"content-type": "application/x-www-form-urlencoded"},
        )
        assert "Content-Type: application/json" in _problem(not_json, 422)["detail"]
        assert (
            _problem(a.post("/v1/recall", json={"query": "x", "types": ["poem"]}), 422)["field"] == "types.0"
        )
        assert _problem(a.post("/v1/check-action", json={"action": " "}), 422)["field"] == "action"
        assert _problem(a.get("/v1/memories", params={"type": "poem"}), 422)["field"].startswith("type")
        moved = _problem(a.put("/v1/memories/x"), 405)
        assert moved["code"] == "method_not_allowed"
        allow = a.put("/v1/memories/x").headers["allow"]
        assert set(allow.split(", ")) == {"GET", "HEAD", "PATCH", "DELETE"}
        created = a.post("/v1/memories", json={"type": "fact", "content": "Deploys happen on Tuesdays"})
        assert created.status_code == 201
        assert a.get(created.headers["location"]).json()["id"] == created.json()["id"]
        a.post("/v1/memories", json={"type": "procedure", "name": "Deploy", "content": "Tag, then roll out"})
        kinds = {m["type"] for m in a.get("/v1/memories", params={"type": "fact"}).json()["items"]}
        assert kinds == {"fact"}
        both = {
            m["type"]
            for m in a.get("/v1/memories", params=[("type", "fact"), ("type", "procedure")]).json()["items"]
        }
        assert both == {"fact", "procedure"}


def test_decisions_episodes_and_sessions_are_first_class(served: tuple[LiveServer, dict[str, str]]) -> None:
    server, keys = served
    with _client(server, keys["a"]) as a, _client(server, keys["b"]) as b:
        started = a.post(
            "/v1/episodes",
            json={
                "title": "Billing migration",
                "trigger": "cost review",
                "participants": ["ana"],
                "frame": "task",
            },
        )
        assert started.status_code == 201, started.text
        episode = started.json()
        assert episode["type"] == "episode" and episode["outcome"] == "ongoing"
        assert a.get(started.headers["location"]).json()["title"] == "Billing migration"
        made = a.post(
            "/v1/decisions",
            json={
                "content": "Move billing events to Kafka",
                "context": "The queue drops messages under load",
                "confidence": 0.8,
                "category": "architecture",
                "stakes": "high",
                "reasons": [{"type": "empirical", "text": "The load test dropped 2% of messages"}],
                "episode_id": episode["id"],
                "tags": ["billing"],
            },
        )
        assert made.status_code == 201, made.text
        decision = made.json()
        assert (decision["stakes"], decision["category"], decision["episode_id"]) == (
            "high",
            "architecture",
            episode["id"],
        )
        assert decision["context"] == "The queue drops messages under load"
        assert a.get(made.headers["location"]).json()["id"] == decision["id"]
        assert [d["id"] for d in a.get("/v1/decisions").json()["items"]] == [decision["id"]]
        _problem(b.get(f"/v1/decisions/{decision['id']}"), 404)
        _problem(a.get(f"/v1/decisions/{episode['id']}"), 404)  # an episode is not a decision
        bad = _problem(a.post("/v1/decisions", json={"content": "x y", "stakes": "huge"}), 422)
        assert bad["field"] == "stakes"
        ended = a.post(
            f"/v1/episodes/{episode['id']}/end",
            json={"summary": "Moved to Kafka", "outcome": "success", "lessons": ["load test first"]},
        )
        assert ended.json()["outcome"] == "success" and ended.json()["ended_at"]
        assert episode["id"] in {e["id"] for e in a.get("/v1/episodes").json()["items"]}
        _problem(b.post(f"/v1/episodes/{episode['id']}/end", json={}), 404)
        # The turn loop: the reply takes `text` as the turn does; `reply` still works.
        assert (
            a.post("/v1/sessions/s1/turns", json={"text": "Where do billing events go?"}).status_code == 200
        )
        state = a.post("/v1/sessions/s1/reply", json={"text": "To Kafka.", "tools_used": ["recall"]}).json()
        assert state["turn_count"] == 1 and state["session_id"] == "s1"
        a.post("/v1/sessions/s2/turns", json={"text": "Hello there"})
        assert a.post("/v1/sessions/s2/reply", json={"reply": "Hi!"}).json()["turn_count"] == 1
        _problem(a.post("/v1/sessions/s2/reply", json={"text": "a", "reply": "b"}), 422)
        assert a.get("/v1/sessions/s1").json()["turn_count"] == 1
        _problem(b.get("/v1/sessions/s1"), 404)
        a.post("/v1/sessions/s2/end", json={})
        listed = a.get("/v1/sessions").json()["items"]
        assert {s["session_id"] for s in listed} == {"s1", "s2"}
        assert [s["session_id"] for s in a.get("/v1/sessions", params={"ended": True}).json()["items"]] == [
            "s2"
        ]
        assert b.get("/v1/sessions").json()["items"] == []
    with _client(server, keys["a_user"]) as alice:
        alice.post("/v1/sessions/s1/turns", json={"text": "Alice asks about billing"})
        assert [s["session_id"] for s in alice.get("/v1/sessions").json()["items"]] == ["s1"]
