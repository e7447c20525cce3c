"""Metadata on every memory and the ``where`` filter on it, on both backends: through ``Nous``, the
REST API on a live server, the Python client, MCP and the CLI; the limits, each filter operator on
list and recall, updates in history, export and import."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client as McpClient
from typer.testing import CliRunner

from nous import Nous, Settings
from nous.cli.app import app as cli_app
from nous.embeddings.base import EmbeddingProvider
from nous.errors import InvalidInputError
from nous.models import HistoryAction
from nous.models.metadata import MAX_METADATA_BYTES, matches, parse_where
from nous.server.mcp import create_mcp_server
from tests.cli_support import data, ok
from tests.test_server import LiveServer, _client, _is_problem, _keys, live

LABELLED: list[tuple[str, dict[str, Any]]] = [
    (
        "Apollo's nightly build compiles the flight software",
        {"project": "apollo", "priority": 3, "reviewed": True},
    ),
    ("Gemini's build pipeline publishes container images", {"project": "gemini", "priority": 1.5}),
    ("Mercury builds are signed with the release key", {"project": "mercury", "priority": "3"}),
    ("Vostok build logs are kept for a month", {"reviewed": False, "priority": 5}),
    ("Soyuz build agents run on spare laptops", {}),
]

# filter -> the contents (by their first word) it keeps, as the docs define each operator
FILTERS: list[tuple[dict[str, Any], set[str]]] = [
    ({"project": "apollo"}, {"Apollo"}),
    ({"project": {"eq": "gemini"}}, {"Gemini"}),
    ({"project": {"in": ["apollo", "mercury", "nowhere"]}}, {"Apollo", "Mercury"}),
    ({"reviewed": {"exists": True}}, {"Apollo", "Vostok"}),
    ({"reviewed": {"exists": False}}, {"Gemini", "Mercury", "Soyuz"}),
    ({"reviewed": True}, {"Apollo"}),
    ({"reviewed": False}, {"Vostok"}),
    ({"priority": {"gte": 1.5, "lt": 5}}, {"Apollo", "Gemini"}),  # the string "3" is no number
    ({"priority": {"gt": 3}}, {"Vostok"}),
    ({"priority": {"lte": 3}}, {"Apollo", "Gemini"}),
    ({"priority": 3}, {"Apollo"}),
    ({"priority": "3"}, {"Mercury"}),
    ({"project": {"in": ["apollo", "gemini"]}, "priority": {"lt": 2}}, {"Gemini"}),
]


def word(content: str) -> str:
    """A labelled memory's name: its first word."""
    return content.split()[0].removesuffix("'s")


async def _labelled(nous: Nous) -> dict[str, str]:
    ids = {}
    for content, metadata in LABELLED:
        written = await nous.learn(content, metadata=metadata, dedup=False)
        ids[word(content)] = written.memory.id
    return ids


async def test_every_kind_keeps_its_metadata(nous: Nous) -> None:
    meta = {"project": "apollo", "nested": {"list": [1, {"deep": "yes"}]}, "n": None}
    fact = (await nous.learn("The staging database is Postgres 15", metadata=meta)).memory
    procedure = (await nous.add_procedure("deploy", "Run the deploy script", metadata=meta)).memory
    censor = (await nous.add_censor(r"rm\s+-rf", reason="destructive", metadata=meta)).memory
    decision = await nous.record_decision("Ship the release on Friday", metadata=meta)
    episode = await nous.start_episode("Release planning", metadata=meta)
    plain = (await nous.learn("The office closes at six in the evening")).memory
    assert plain.metadata == {}
    for memory in (fact, procedure, censor, decision, episode):
        assert memory.metadata == meta
        assert (await nous.get(memory.id)).metadata == meta
    listed = await nous.memories(where={"project": "apollo"}, limit=100)
    assert {m.id for m in listed} == {fact.id, procedure.id, censor.id, decision.id, episode.id}


@pytest.mark.parametrize(
    ("metadata", "words"),
    [
        ({"": 1}, "keys must be non-empty"),
        ({"k" * 101: 1}, "at most 100 characters"),
        ({str(i): i for i in range(65)}, "at most 64"),
        ({"a": {"b": {"c": {"d": {"e": {"f": {"g": 1}}}}}}}, "deeper than 6"),
        ({"blob": "x" * MAX_METADATA_BYTES}, "bytes as JSON"),
        ({"x": float("nan")}, "finite"),
        (["not", "an", "object"], "JSON object"),
    ],
)
async def test_metadata_beyond_the_limits_is_refused_and_nothing_is_written(
    nous: Nous, metadata: Any, words: str
) -> None:
    kept = (await nous.learn("The build server is in Frankfurt", metadata={"ok": 1})).memory
    with pytest.raises(InvalidInputError, match=words) as raised:
        await nous.learn("The backup server is in Dublin", metadata=metadata)
    assert raised.value.field == "metadata"
    with pytest.raises(InvalidInputError, match=words):
        await nous.record_decision("Move the backups to Dublin", metadata=metadata)
    with pytest.raises(InvalidInputError, match=words):
        await nous.update(kept.id, metadata=metadata)
    assert [m.id for m in await nous.memories(limit=100)] == [kept.id]
    assert (await nous.get(kept.id)).metadata == {"ok": 1}
    assert len(await nous.history(kept.id)) == 1  # its creation only


async def test_update_replaces_the_metadata_and_history_records_it(nous: Nous) -> None:
    fact = (await nous.learn("The release train leaves every second Tuesday", metadata={"a": 1})).memory
    updated = await nous.update(fact.id, metadata={"b": [2]})
    assert updated.metadata == {"b": [2]}  # replaced, not merged
    change = (await nous.history(fact.id))[-1]
    assert change.action == HistoryAction.UPDATE
    assert change.old_value == {"metadata": {"a": 1}} and change.new_value == {"metadata": {"b": [2]}}
    assert (await nous.update(fact.id, metadata={})).metadata == {}
    assert await nous.memories(where={"b": {"exists": True}}) == []


async def test_each_filter_operator_on_list_and_recall(nous: Nous) -> None:
    await _labelled(nous)
    everything = await nous.memories(limit=100)
    for where, expected in FILTERS:
        listed = {word(m.content) for m in await nous.memories(where=where, limit=100)}
        assert listed == expected, where
        reference = parse_where(where)
        assert {word(m.content) for m in everything if matches(m.metadata, reference)} == expected, where
        hits = await nous.recall("what do we know about the builds?", where=where, limit=10, min_score=0)
        assert {word(h.memory.content) for h in hits} == expected, where


async def test_a_recall_filter_narrows_the_search_before_the_top_k(nous: Nous) -> None:
    """Thirty closer memories without the label: a post-filtered top 3 would come back empty."""
    for i in range(30):
        await nous.learn(f"The nightly job number {i} writes its report to the shared drive", dedup=False)
    wanted = {
        (await nous.learn(text, metadata={"team": "ops"}, dedup=False)).memory.id
        for text in (
            "The weekly job writes its summary to the team wiki",
            "The monthly job emails its report to finance",
            "The hourly job prints its report to the console",
        )
    }
    hits = await nous.recall("where does the nightly job write its report?", limit=3, min_score=0)
    assert not {h.id for h in hits} & wanted
    hits = await nous.recall(
        "where does the nightly job write its report?", limit=3, min_score=0, where={"team": "ops"}
    )
    assert {h.id for h in hits} == wanted


async def test_a_filter_used_again_follows_every_write(nous: Nous, provider: EmbeddingProvider) -> None:
    """The same filter recalled after each kind of write (new, changed into and out of the filter,
    forgotten, purged, written by a second process on the same store) finds exactly the matching
    memories: a backend that keeps a filter's result between searches brings it up to date."""
    where = {"team": "ops"}
    question = "where does the job write its report?"
    ids = [
        (
            await nous.learn(f"The job number {i} writes its report to drive {i}", metadata=m, dedup=False)
        ).memory.id
        for i, m in enumerate([{"team": "ops"}, {"team": "ops"}, {"team": "dev"}, {}])
    ]

    async def found() -> set[str]:
        hits = {h.id for h in await nous.recall(question, where=where, limit=10, min_score=0)}
        assert {h.id for h in await nous.recall(question, where=where, limit=10, min_score=0)} == hits
        return hits

    assert await found() == {ids[0], ids[1]}
    await nous.update(ids[2], metadata={"team": "ops"})  # into the filter
    assert await found() == {ids[0], ids[1], ids[2]}
    await nous.update(ids[0], metadata={"team": "dev"})  # out of it
    assert await found() == {ids[1], ids[2]}
    await nous.forget(ids[1])
    assert await found() == {ids[2]}
    new = (
        await nous.learn("The job number 9 writes its report to the wiki", metadata=where, dedup=False)
    ).memory.id
    assert await found() == {ids[2], new}
    await nous.forget(new, hard=True)
    assert await found() == {ids[2]}
    async with Nous(nous.settings, agent_id=nous.agent_id, embedding_provider=provider) as other:
        await other.update(ids[3], metadata={"team": "ops"})  # a write the first store did not make
    assert await found() == {ids[2], ids[3]}


@pytest.mark.parametrize(
    ("where", "field", "words"),
    [
        ({"project": {"like": "a%"}}, "where.project", "unknown operator"),
        ({"project": {"in": "apollo"}}, "where.project", "list"),
        ({"project": {"in": []}}, "where.project", "list"),
        ({"priority": {"gte": "2"}}, "where.priority", "number"),
        ({"priority": {"lt": True}}, "where.priority", "number"),
        ({"reviewed": {"exists": 1}}, "where.reviewed", "true or false"),
        ({"project": None}, "where.project", "string, number or boolean"),
        ({"project": ["a"]}, "where.project", "string, number or boolean"),
        ({"project": {}}, "where.project", "at least one operator"),
        ({"": 1}, "where", "non-empty"),
        ("[1]", "where", "JSON object"),
    ],
)
async def test_a_bad_filter_names_the_field(nous: Nous, where: Any, field: str, words: str) -> None:
    for call in (nous.memories(where=where), nous.recall("anything at all", where=where)):
        with pytest.raises(InvalidInputError, match=words) as raised:
            await call
        assert raised.value.field == field


async def test_export_and_import_keep_the_metadata(
    nous: Nous, tmp_path: Path, settings: Settings, provider: EmbeddingProvider
) -> None:
    await _labelled(nous)
    path = tmp_path / "export.jsonl"
    await nous.export_jsonl(path)
    other = settings.model_copy(update={"database_url": f"sqlite:///{tmp_path / 'copy.db'}"})
    async with Nous(other, embedding_provider=provider) as copy:
        await copy.import_jsonl(path)
        assert {m.content: m.metadata for m in await copy.memories(limit=100)} == dict(LABELLED)
        assert {word(m.content) for m in await copy.memories(where={"priority": {"gte": 3}})} == {
            "Apollo",
            "Vostok",
        }


# -- over the wire ------------------------------------------------------------------------------


@pytest.fixture
def served(database_url: str, settings: Settings) -> Iterator[tuple[LiveServer, dict[str, str]]]:
    with live(settings.model_copy(update={"database_url": database_url}), _keys) as pair:
        yield pair


def test_metadata_and_filters_over_rest(served: tuple[LiveServer, dict[str, str]]) -> None:
    server, keys = served
    with _client(server, keys["a"]) as http:
        ids = {}
        for content, metadata in LABELLED:
            made = http.post(
                "/v1/memories",
                json={"type": "fact", "content": content, "metadata": metadata, "dedup": False},
            )
            assert made.status_code == 201, made.text
            assert made.json()["memory"]["metadata"] == metadata
            ids[word(content)] = made.json()["id"]
        assert http.get(f"/v1/memories/{ids['Apollo']}").json()["metadata"] == LABELLED[0][1]
        page = http.get(f"/ui/memories/{ids['Apollo']}").text  # the inspector shows it
        shown = page[page.index("<h2>Metadata</h2>") : page.index("<h2>Provenance</h2>")]
        assert all(f"<dt>{key}</dt>" in shown for key in LABELLED[0][1]) and "apollo" in shown
        for where, expected in FILTERS:
            page = http.get("/v1/memories", params={"where": json.dumps(where)}).json()
            assert {word(m["content"]) for m in page["items"]} == expected, where
            found = http.post(
                "/v1/recall",
                json={"query": "what do we know about the builds?", "where": where, "min_score": 0},
            ).json()["results"]
            assert {word(r["content"]) for r in found} == expected, where
            assert all(r["memory"]["metadata"] == dict(LABELLED)[r["content"]] for r in found)
        changed = http.patch(f"/v1/memories/{ids['Soyuz']}", json={"metadata": {"project": "soyuz"}})
        assert changed.status_code == 200 and changed.json()["metadata"] == {"project": "soyuz"}
        history = http.get(f"/v1/memories/{ids['Soyuz']}/history").json()
        assert history[-1]["new_value"] == {"metadata": {"project": "soyuz"}}
        decision = http.post("/v1/decisions", json={"content": "Freeze on Friday", "metadata": {"q": 3}})
        assert decision.status_code == 201 and decision.json()["metadata"] == {"q": 3}
        episode = http.post("/v1/episodes", json={"title": "Freeze week", "metadata": {"q": 4}})
        assert episode.status_code == 201 and episode.json()["metadata"] == {"q": 4}

        before = http.get("/v1/memories", params={"limit": 100}).json()["items"]
        bad = http.post("/v1/memories", json={"type": "fact", "content": "Nothing here", "metadata": {"": 1}})
        assert _is_problem(bad, 422)["field"] == "metadata"
        deep = {"a": {"b": {"c": {"d": {"e": {"f": {"g": 1}}}}}}}
        bad = http.patch(f"/v1/memories/{ids['Soyuz']}", json={"metadata": deep})
        assert _is_problem(bad, 422)["field"] == "metadata"
        bad = http.post(
            "/v1/decisions", json={"content": "Too big", "metadata": {"x": "y" * MAX_METADATA_BYTES}}
        )
        assert _is_problem(bad, 422)["field"] == "metadata"
        assert http.get("/v1/memories", params={"limit": 100}).json()["items"] == before
        bad = http.post("/v1/recall", json={"query": "cluster", "where": {"priority": {"gte": "2"}}})
        assert _is_problem(bad, 422)["field"] == "where" and "where.priority" in bad.json()["detail"]
        bad = http.get("/v1/memories", params={"where": '{"priority": {"between": [1, 2]}}'})
        assert _is_problem(bad, 422)["field"] == "where.priority"
        bad = http.get("/v1/memories", params={"where": "not json"})
        assert _is_problem(bad, 422)["field"] == "where"


async def test_metadata_and_filters_through_the_client(served: tuple[LiveServer, dict[str, str]]) -> None:
    from nous import AsyncClient, Client

    server, keys = served
    async with AsyncClient(server.url, key=keys["a"]) as client:
        for content, metadata in LABELLED:
            assert (await client.learn(content, metadata=metadata, dedup=False)).memory.metadata == metadata
        for where, expected in FILTERS:
            assert {word(m.content) for m in await client.memories(where=where)} == expected, where
            hits = await client.recall("what do we know about the builds?", where=where, min_score=0)
            assert {word(h.memory.content) for h in hits} == expected, where
        episode = await client.start_episode("Cluster migration", metadata={"project": "apollo"})
        assert episode.metadata == {"project": "apollo"}
        with pytest.raises(InvalidInputError) as raised:
            await client.learn("The cluster is in Oslo", metadata={"": 1})
        assert raised.value.field == "metadata"
    with Client(server.url, key=keys["a"]) as blocking:
        fact = blocking.learn("The red cluster has 64 nodes", metadata={"nodes": 64})
        assert blocking.update(fact.memory.id, metadata={"nodes": 65}).metadata == {"nodes": 65}
        assert [m.id for m in blocking.memories(where={"nodes": {"gt": 64}})] == [fact.memory.id]


async def test_mcp_remember_takes_metadata_and_recall_a_filter(
    database_url: str, settings: Settings, provider: EmbeddingProvider
) -> None:
    run = settings.model_copy(update={"database_url": database_url})
    server = create_mcp_server(lambda: Nous(run, embedding_provider=provider))
    async with McpClient(server) as mcp:
        for content, metadata in LABELLED:
            stored = await mcp.call_tool("remember", {"content": content, "metadata": metadata})
            assert not stored.is_error, stored
        for where, expected in FILTERS:
            found = await mcp.call_tool(
                "recall", {"query": "what do we know about the builds?", "where": where, "min_score": 0}
            )
            assert not found.is_error, found
            results = found.structured_content["result"]
            assert {word(r["content"]) for r in results} == expected, where
            assert all(r.get("metadata", {}) == dict(LABELLED)[r["content"]] for r in results)
        bad = await mcp.call_tool("recall", {"query": "cluster", "where": {"priority": {"gte": "2"}}})
        assert bad.is_error and "where.priority" in json.dumps(bad.model_dump(mode="json"))
        bad = await mcp.call_tool("remember", {"content": "The cluster is in Oslo", "metadata": {"": 1}})
        assert bad.is_error
    async with Nous(run, embedding_provider=provider) as nous:
        assert len(await nous.memories(limit=100)) == len(LABELLED)


def test_the_cli_writes_and_filters_metadata(
    cli: CliRunner, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOUS_DATABASE_URL", database_url)
    monkeypatch.setenv("NOUS_EVENTS_WORKER", "off")
    made = data(
        cli, "learn", "The Apollo build runs on the red cluster", "--meta", "project=apollo",
        "--meta", "priority=3", "--meta", 'labels=["a", "b"]', "--meta", "note=not json: text",
    )  # fmt: skip
    data(cli, "learn", "The Gemini build runs on the blue cluster", "--meta", "project=gemini", "--no-dedup")
    facts = data(cli, "facts", "--meta", "project=apollo")
    assert [f["id"] for f in facts] == [made["id"]]
    assert facts[0]["metadata"] == {
        "project": "apollo",
        "priority": 3,
        "labels": ["a", "b"],
        "note": "not json: text",
    }
    assert [f["content"] for f in data(cli, "facts", "--meta", 'priority={"gte": 3}')] == [
        facts[0]["content"]
    ]
    hits = data(
        cli, "recall", "what do we know about the builds?", "--meta", "project=gemini", "--min-score", "0"
    )
    assert [h["content"] for h in hits] == ["The Gemini build runs on the blue cluster"]
    assert "Apollo build" in ok(cli, "facts", "--meta", "project=apollo").stdout  # the table
    bad = cli.invoke(cli_app, ["learn", "Some fact here", "--meta", "oops"])
    assert bad.exit_code == 2 and "KEY=VALUE" in bad.output
    bad = cli.invoke(cli_app, ["facts", "--meta", 'priority={"between": 1}'])
    assert bad.exit_code != 0 and "unknown operator" in bad.output
    assert len(data(cli, "facts")) == 2


async def test_langgraph_items_live_in_the_metadata(nous: Nous) -> None:
    from nous.integrations.langgraph import NousStore

    store = NousStore(nous)
    value = {"content": "Alice drinks green tea", "details": {"cups": [1, 2]}}
    await store.aput(("memories", "alice"), "tea", value)
    found = await nous.memories(where={"langgraph_namespace": "memories.alice"})
    assert [m.metadata["langgraph_value"] for m in found] == [value] and found[0].tags == []
    item = await store.aget(("memories", "alice"), "tea")
    assert item is not None and item.value == value
