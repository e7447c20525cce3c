"""``AsyncClient`` has the methods, parameters and return models of ``Nous``: every client method
is a ``Nous`` method with the same return type and the same parameters (names, order, kinds,
annotations, defaults), less the ones the server decides itself; every ``Nous`` method the client
lacks runs only inside the engine. Both lists say why."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path

import pytest

from nous import (
    ActionDecision,
    AsyncClient,
    Calibration,
    Censor,
    CensorAction,
    Client,
    Context,
    Decision,
    EdgeRelation,
    Episode,
    Fact,
    HistoryEntry,
    IngestReport,
    InvalidInputError,
    NotFoundError,
    Nous,
    Procedure,
    RecallHit,
    SessionEnd,
    SessionState,
    Stakes,
    StoreStats,
    TurnContext,
    TurnResult,
)
from nous.config import Settings
from tests.test_server import LiveServer, _keys, live

# Parameters never sent over HTTP: the server decides them.
SERVER_DECIDES = {
    "actor": "the API key is the actor of every change",
    "provenance": "the engine records where a memory came from",
    "censors": "a memory written in a live session carries that session's active censors",
    "record": "the server records every censor check",
    "progress": "a callback runs in the engine's process",
    "on_parsed": "a callback runs in the engine's process",
    "vectors": "embeddings move only between engines: the server embeds what it imports itself",
}

# Nous methods with no HTTP twin: they run the engine itself, not one agent's memory over a key.
ENGINE_ONLY = {
    "open": "the client opens on construction",
    "add_many": "bulk writes of ready-made memories: use import_jsonl",
    "check_censors": "check_action judges an action over HTTP",
    "similar": "raw cosine neighbours for dedup internals: use check_similar",
    "backfill_embeddings": "maintenance of the server's own store (nous maintain)",
    "maintain": "maintenance of the server's own store (nous maintain)",
    "build_threads": "maintenance of the server's own store (its event worker, nous maintain)",
    "run_pipeline": "the server runs its own event worker",
    "process_events": "the server runs its own event worker",
    "end_idle_sessions": "the server's worker ends idle sessions",
    "retry_event": "operator action on the server (nous events retry)",
    "llm_usage": "operator view on the server (nous stats)",
}

CLIENT_ONLY = {"health", "close"}


def _methods(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(fn)
        for name, fn in vars(cls).items()
        if not name.startswith("_") and (inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn))
    }


def test_the_client_has_every_method_of_nous_but_the_engine_only_ones() -> None:
    ours, theirs = _methods(AsyncClient), _methods(Nous)
    assert set(theirs) - set(ours) - {"close"} == set(ENGINE_ONLY)
    assert set(ours) - set(theirs) == CLIENT_ONLY - {"close"}


def test_each_client_method_takes_the_parameters_of_nous_less_what_the_server_decides() -> None:
    ours, theirs = _methods(AsyncClient), _methods(Nous)
    for name in set(ours) & set(theirs) - {"close"}:
        mine, engine = ours[name], theirs[name]
        expected = [p for p in engine.parameters.values() if p.name not in SERVER_DECIDES]
        assert list(mine.parameters.values()) == expected, name
        assert mine.return_annotation == engine.return_annotation, name


@pytest.fixture
def served(database_url: str, settings: Settings) -> Iterator[tuple[LiveServer, dict[str, str]]]:
    with live(settings.model_copy(update={"database_url": database_url}), _keys) as pair:
        yield pair


def test_the_client_returns_the_engines_models_over_a_real_server(
    served: tuple[LiveServer, dict[str, str]], tmp_path: Path
) -> None:
    """One pass over the client's methods against `nous serve` on loopback (both backends): each
    answer is the model ``Nous`` returns, and an agent's key acts for a user it names."""
    server, keys = served
    with Client(server.url, key=keys["a"]) as c:
        fact = c.learn("Dana prefers window seats", category="preference", user_id="dana")
        assert isinstance(fact.memory, Fact) and fact.memory.user_id == "dana"
        assert c.check_similar("Dana prefers window seats", user_id="dana").duplicate is not None
        decision = c.record_decision(
            "Book the 9:40 train",
            stakes="high",
            category="process",
            reasons=[{"type": "constraint", "text": "the meeting starts at 11"}],
        )
        assert isinstance(decision, Decision) and decision.stakes == Stakes.HIGH
        assert c.review_decision(decision.id, "success").outcome == "success"
        episode = c.start_episode("Trip planning", user_id="dana")
        assert isinstance(episode, Episode)
        assert c.end_episode(episode.id, summary="Booked the train").summary == "Booked the train"
        procedure = c.add_procedure("Book travel", "Check the calendar, then book", goals=["on time"])
        assert isinstance(procedure.memory, Procedure) and procedure.memory.goals == ["on time"]
        censor = c.add_censor(r"(?i)first\s+class", action=CensorAction.BLOCK, reason="budget")
        assert isinstance(censor.memory, Censor)
        assert c.check_action("book first class").decision == ActionDecision.BLOCK
        assert c.edit_censor(censor.id, action="warn").action == CensorAction.WARN
        hits = c.recall("which seat does Dana like?", user_id="dana")
        assert hits[0].id == fact.id and isinstance(hits[0], RecallHit) and hits[0].current
        turn = c.pre_turn("trip", "Which seat should I book for Dana?", user_id="dana")
        assert isinstance(turn, TurnContext) and turn.turn == 1 and "window" in turn.text
        preview = c.preview_turn("Which seat for Dana?", user_id="dana")
        assert isinstance(preview, Context) and "window" in preview.text and preview.sections
        state = c.post_turn("trip", TurnResult(reply="A window seat.", tools_used=["recall"]))
        assert isinstance(state, SessionState) and state.turn_count == 1
        assert [s.session_id for s in c.sessions(ended=False)] == ["trip"]
        ended = c.end_session("trip", reflection="Dana likes window seats")
        assert isinstance(ended, SessionEnd) and ended.session.ended
        assert all(isinstance(h, HistoryEntry) for h in c.history(fact.id))
        assert isinstance(c.stats(), StoreStats) and isinstance(c.calibration(), Calibration)
        assert {m.id for m in c.memories(["fact"], user_id="dana")} >= {fact.id}
        listed = [m.id for m in c.memories(limit=3)]
        assert [m.id for m in c.memories(limit=2, offset=1)] == listed[1:3]  # offset is honoured
        assert c.link(fact.id, decision.id, EdgeRelation.RELATES_TO) is True
        path = tmp_path / "export.jsonl"
        assert c.export_jsonl(path) == len(c.export_lines()) > 0
        report = c.ingest('{"messages": [{"role": "user", "content": "Dana flies on Friday."}]}')
        assert isinstance(report, IngestReport) and report.turns == 1
        with pytest.raises(InvalidInputError) as caught:
            c.learn("A fact", category="nonsense")
        assert caught.value.field == "category"
        with pytest.raises(NotFoundError):
            c.get("no-such-memory")
