"""`POST /v1/ingest` reads every conversation shape `nous ingest` reads: the parser's shapes, the
422's list of them and docs/rest.md's list are one list, and each shape is stored over REST by a
real server on loopback (both backends), with and without ``Idempotency-Key``."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import get_args

import httpx
import pytest

from nous import Settings
from nous.ingest import parse_conversation
from nous.ingest.formats import FORMATS
from nous.ingest.shapes import ACCEPTED, SHAPES, Shape, detect_shape
from nous.server.idempotency import REPLAYED
from tests.test_server import LiveServer, _keys, live

REST_MD = Path(__file__).resolve().parents[1] / "docs" / "rest.md"
NAMED = [shape.named for shape in SHAPES]


@pytest.fixture
def served(database_url: str, settings: Settings) -> Iterator[tuple[LiveServer, dict[str, str]]]:
    with live(settings.model_copy(update={"database_url": database_url}), _keys) as pair:
        yield pair


def _documented() -> list[str]:
    """The shapes docs/rest.md lists (the items after its `conversation shapes` marker)."""
    text = REST_MD.read_text(encoding="utf-8").split("<!-- conversation shapes:")[1]
    block = text.split("-->", 1)[1].strip().split("\n\n")[0]
    return [re.match(r"- `(.+?)`: ", line).group(1) for line in block.splitlines()]  # type: ignore[union-attr]


def _listed(detail: str) -> list[str]:
    """The shapes a refusal lists, after its ``accepted:``."""
    return detail.split("accepted: ", 1)[1].split("; ")


def test_the_parser_the_refusal_and_the_docs_name_the_same_shapes() -> None:
    assert {shape.format for shape in SHAPES} == set(get_args(Shape)) == set(FORMATS) - {"auto"}
    for shape in SHAPES:
        assert detect_shape(shape.example) == shape.format, shape.named
        assert parse_conversation(json.dumps(shape.example)).sessions, shape.named
    assert _listed(ACCEPTED) == NAMED
    assert _documented() == NAMED
    assert len(set(NAMED)) == len(NAMED) == len({json.dumps(s.example) for s in SHAPES})


def test_every_shape_is_stored_over_rest_and_anything_else_lists_them(
    served: tuple[LiveServer, dict[str, str]],
) -> None:
    server, keys = served
    with httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {keys['a']}"}, timeout=120
    ) as a:
        spec = a.get("/openapi.json").json()
        content = spec["paths"]["/v1/ingest"]["post"]["requestBody"]["content"]["application/json"]
        assert [e["value"] for e in content["examples"].values()] == [s.example for s in SHAPES]
        assert {kind["type"] for kind in content["schema"]["anyOf"]} == {"object", "array"}
        for shape in SHAPES:
            stored = a.post("/v1/ingest", params={"wait": "true"}, json=shape.example)
            assert stored.status_code == 200, (shape.named, stored.text)
            assert stored.json()["turns"] > 0 and stored.json()["sessions"] >= 1, shape.named
        queued = a.post("/v1/ingest", json=[{"role": "user", "content": "I keep bees in Sintra."}])
        assert queued.status_code == 202 and queued.headers["Location"].startswith("/v1/jobs/")
        for bad in ({"foo": 1}, [], "just text", [1, 2]):
            refused = a.post("/v1/ingest", params={"wait": "true"}, json=bad)
            assert refused.status_code == 422, (bad, refused.text)
            assert _listed(refused.json()["detail"]) == NAMED, refused.text


def test_a_retried_list_body_with_an_idempotency_key_gets_the_first_answer(
    served: tuple[LiveServer, dict[str, str]],
) -> None:
    server, keys = served
    body = [{"role": "user", "content": "The offsite moved to Lisbon."}]
    headers = {"Authorization": f"Bearer {keys['a']}", "Idempotency-Key": "ingest-list-1"}
    first = httpx.post(f"{server.url}/v1/ingest", json=body, headers=headers, timeout=120)
    again = httpx.post(f"{server.url}/v1/ingest", json=body, headers=headers, timeout=120)
    assert first.status_code == again.status_code == 202, first.text
    assert again.json() == first.json() and again.headers[REPLAYED] == "true"
    other = httpx.post(
        f"{server.url}/v1/ingest", json=[*body, {"role": "user", "content": "No, Porto."}], headers=headers
    )
    assert other.status_code == 422 and other.json()["code"] == "idempotency_key_reused"
