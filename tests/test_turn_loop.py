"""The turn loop (pre_turn / post_turn / end_session) on both backends with the real model:
sessions in the store, frames, the context engine's budgets and sections, recap, follow-ups."""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from nous import Nous, Settings
from nous.cognitive import TurnResult
from nous.embeddings.base import EmbeddingProvider
from nous.errors import ConflictError, InvalidInputError, NotFoundError
from nous.ingest import ingested_session_key

T0 = datetime(2026, 2, 28, 12, 0, tzinfo=UTC)
HELLO = "Hello / what can you do?"
VOCABULARY = [
    "harbour",
    "kettle",
    "violin",
    "glacier",
    "pepper",
    "ledger",
    "orchard",
    "canvas",
    "beacon",
    "saddle",
    "quartz",
    "meadow",
    "lantern",
    "compass",
    "thistle",
    "falcon",
    "granite",
    "walnut",
    "ribbon",
    "anchor",
    "cobalt",
    "marble",
    "saffron",
    "tundra",
    "velvet",
    "willow",
    "zephyr",
    "basalt",
    "cinder",
    "dune",
    "ember",
    "fjord",
    "grove",
    "hazel",
    "iris",
    "juniper",
    "kelp",
    "lagoon",
    "maple",
    "nectar",
    "onyx",
    "prairie",
    "quill",
    "reef",
    "sable",
    "timber",
    "umber",
    "vale",
    "wharf",
    "yarrow",
    "zinc",
    "acorn",
    "birch",
    "cedar",
    "delta",
    "estuary",
]
LONG_REPLY = "I can remember facts, decisions and procedures for you across sessions. " * 3


async def _exchange(nous: Nous, session: str, text: str, reply: str, at: datetime, **kw: object) -> None:
    await nous.pre_turn(session, text, at=at, **kw)  # type: ignore[arg-type]
    await nous.post_turn(session, reply, at=at + timedelta(seconds=30))


# -- frames --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "frame"),
    [
        ("Hello, what can you do?", "conversation"),
        ("I'm getting a KeyError when I run the import script", "debug"),
        ("Should we use PostgreSQL or MongoDB for the orders service?", "decision"),
        ("Write a short poem about autumn for my newsletter", "creative"),
        ("When is my dentist appointment?", "question"),
        ("Set up the staging database and run the migrations", "task"),
    ],
)
async def test_frame_is_chosen_from_the_text(nous: Nous, text: str, frame: str) -> None:
    await nous.set_identity("character", "A careful, friendly assistant.")
    ctx = await nous.pre_turn("s", text, at=T0)
    assert ctx.frame == frame and 0 < ctx.frame_confidence <= 1


async def test_a_new_agent_without_identity_starts_in_initiation(nous: Nous) -> None:
    ctx = await nous.pre_turn("first", "Hi there!", at=T0)
    assert ctx.frame == "initiation" and ctx.greeting
    await nous.set_identity("character", "Nia, a patient research assistant.")
    assert (await nous.pre_turn("second", "Hi there!", at=T0)).frame == "conversation"


async def test_unknown_frame_is_a_typed_error_everywhere(nous: Nous) -> None:
    with pytest.raises(InvalidInputError, match="unknown frame"):
        await nous.pre_turn("s", "What is the plan?", frame="no-such-frame")
    with pytest.raises(InvalidInputError, match="unknown frame"):
        await nous.recall("plan", frame="no-such-frame")
    with pytest.raises(NotFoundError):
        await nous.session("s")  # nothing half-written: the session never started


# -- sessions in the store -----------------------------------------------------------------------
async def test_twelve_greeting_sessions_leave_at_most_one_live_episode(nous: Nous) -> None:
    for i in range(12):
        ctx = await nous.pre_turn(f"hello-{i}", HELLO, at=T0 + timedelta(minutes=i))
        assert ctx.greeting
        await nous.post_turn(f"hello-{i}", "I remember things for you.", at=T0 + timedelta(minutes=i))
        await nous.end_session(f"hello-{i}")
    live = await nous.memories("episode")
    assert len(live) <= 1


async def test_greetings_get_no_retrieval(nous: Nous) -> None:
    await nous.learn("The user's favourite colour is green.", category="preference")
    ctx = await nous.pre_turn("s", "Hello!", at=T0)
    assert ctx.greeting
    assert all(s.name not in {"facts", "turns", "episodes", "decisions"} or not s.items for s in ctx.sections)


async def test_session_counters_live_in_the_store_and_survive_a_restart(
    database_url: str, settings: Settings, provider: EmbeddingProvider, tmp_path: Path
) -> None:
    async with Nous(settings, database_url=database_url, embedding_provider=provider) as nous:
        ctx = await nous.pre_turn("trip", "Help me plan the ski trip to Verbier in March", at=T0)
        assert ctx.episode_action == "created" and ctx.turn == 1
        await nous.post_turn("trip", TurnResult(reply=LONG_REPLY, tools_used=["recall"]), at=T0)
    async with Nous(settings, database_url=database_url, embedding_provider=provider) as nous:
        state = await nous.session("trip")
        assert state.turn_count == 1 and state.tools_used == ["recall"] and state.episode_id == ctx.episode_id
        again = await nous.pre_turn("trip", "What about ski passes?", at=T0 + timedelta(minutes=2))
        assert (
            again.episode_action == "already_open" and again.episode_id == ctx.episode_id and again.turn == 2
        )
    # A second process continues the same session and ends it.
    script = (
        "import asyncio, sys\n"
        "from nous import Nous, Settings\n"
        "async def main():\n"
        # (no worker: its idle-session sweep would end this back-dated session before the script does)
        f"    s = Settings(home={str(settings.home)!r}, database_url={database_url!r}, agent_id={settings.agent_id!r}, events_worker='off')\n"
        "    async with Nous(s) as n:\n"
        "        await n.post_turn('trip', 'A six-day pass is cheapest.')\n"
        "        end = await n.end_session('trip', reflection='Book ski passes online, a week ahead.')\n"
        "        print(end.session.turn_count, end.episode is not None and end.episode.ended_at is not None)\n"
        "asyncio.run(main())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.split() == ["2", "True"]
    async with Nous(settings, database_url=database_url, embedding_provider=provider) as nous:
        state = await nous.session("trip")
        assert state.ended and state.turn_count == 2
        with pytest.raises(ConflictError, match="has ended"):
            await nous.pre_turn("trip", "One more thing about passes")
        assert (await nous.end_session("trip")).episode is None  # ending again changes nothing
        turns = await nous.memories("turn")
        assert {t.content for t in turns} >= {
            "user: Help me plan the ski trip to Verbier in March",
            "assistant: A six-day pass is cheapest.",
        }
        lessons = [f for f in await nous.memories("fact") if f.category == "lesson"]
        assert [f.content for f in lessons] == ["Book ski passes online, a week ahead."]


async def test_unknown_session_and_bad_input_are_typed_errors(nous: Nous) -> None:
    with pytest.raises(NotFoundError):
        await nous.end_session("nope")
    with pytest.raises(NotFoundError):
        await nous.post_turn("nope", "a reply")
    with pytest.raises(InvalidInputError):
        await nous.pre_turn("s", "   ")
    with pytest.raises(InvalidInputError, match="at least 200 tokens"):
        await nous.pre_turn("s", "What did I say about Lisbon?", budget=100)
    with pytest.raises(NotFoundError):
        await nous.session("s")  # rejected before anything was written


# -- the context ---------------------------------------------------------------------------------
async def test_ski_trip_recap(nous: Nous) -> None:
    """Spec: 'what did we talk about recently' after a ski-trip session surfaces the ski trip."""
    await nous.set_identity("character", "A helpful assistant.")
    day = T0 - timedelta(hours=5)
    for i, topic in enumerate(
        [
            "Refactor the payment service so the retry logic lives in one module",
            "Review the pull request that adds OAuth login to the admin console",
            "Write the release notes for version 2.4 of the CLI",
        ]
    ):
        await _exchange(nous, f"dev-{i}", topic, LONG_REPLY, day - timedelta(days=1, hours=i))
        await nous.end_session(f"dev-{i}", at=day - timedelta(days=1, hours=i) + timedelta(minutes=5))
    ski = "Plan a solo ski trip to Breckenridge in March on a budget of two thousand dollars"
    await _exchange(nous, "ski", ski, "Let's look at lift tickets, lodging and flights. " * 4, day)
    await _exchange(nous, "ski", "Lodging near the gondola, please", "The Gravity Haus is close. " * 5, day)
    await nous.end_session("ski", at=day + timedelta(minutes=20))
    ctx = await nous.pre_turn("new", "what did we talk about recently", at=T0)
    assert ctx.recap
    recent = ctx.section("recent")
    assert recent is not None and recent.items and "ski trip" in recent.items[0].text.lower()
    assert ctx.sections[5].name == "recent"  # recap: first after the fixed sections
    assert "Breckenridge" in ctx.text


async def test_follow_up_is_resolved_to_the_previous_topic(nous: Nous) -> None:
    await nous.learn("The Lisbon conference runs from 12 to 14 May at the FIL venue.")
    await nous.learn("Our team's budget for travel this year is 8,000 euros.")
    first = await nous.pre_turn("s", "Tell me about the Lisbon conference")  # now: after the facts
    assert first.query == "Tell me about the Lisbon conference"
    await nous.post_turn("s", "It is in May.")
    more = await nous.pre_turn("s", "tell me more")
    assert more.query.startswith("Tell me about the Lisbon conference") and "FIL venue" in more.text
    state = await nous.session("s")
    assert state.topic == "Tell me about the Lisbon conference"  # a follow-up keeps the topic


async def test_context_sections_order_budgets_and_drops(nous: Nous) -> None:
    await nous.set_identity("character", "Ada, a meticulous engineering assistant.")
    old = (await nous.learn("The deploy window is Tuesday at 10:00.", subject="deploy window")).memory
    new = await nous.learn(
        "The deploy window moved to Thursday at 15:00.", subject="deploy window", supersedes=old.id
    )
    await nous.add_censor("rm -rf /", action="absolute", reason="never wipe the root filesystem")
    ctx = await nous.pre_turn("s", "When is the deploy window?", at=T0)
    names = [s.name for s in ctx.sections]
    assert names[:5] == ["identity", "user_profile", "censors", "frame", "working_memory"]
    assert names.index("facts") < names.index("turns")
    # The current value is shown, with the one it replaced marked as replaced, never as current.
    facts = ctx.section("facts")
    assert facts is not None and [i.id for i in facts.items] == [new.memory.id]
    assert 'Thursday at 15:00. (current; it replaced "The deploy window is Tuesday at 10:00."' in ctx.text
    assert new.memory.id in ctx.included_ids()
    assert "never wipe the root filesystem" in ctx.text and "Ada" in ctx.text
    for s in ctx.sections:
        assert s.tokens <= s.budget
    assert ctx.tokens <= ctx.budget == 6000


async def test_what_the_last_turns_said_is_left_out(nous: Nous) -> None:
    await _exchange(nous, "s", "My sister Maya lives in Oslo and works as an architect", "Noted!", T0)
    ctx = await nous.pre_turn("s", "Where does my sister live?", at=T0 + timedelta(minutes=1))
    turns = ctx.section("turns")
    assert turns is not None
    assert any(d.reason == "already_said" for d in turns.dropped)
    assert "works as an architect" not in ctx.text


async def test_small_total_budget_is_enforced(nous: Nous) -> None:
    for i in range(30):
        detail = " ".join(random.Random(i).sample(VOCABULARY, 40))
        await nous.learn(f"Project Falcon milestone {i} shipped: {detail}.", dedup=False)
    ctx = await nous.pre_turn("s", "What did Project Falcon ship?", budget=2200)
    assert ctx.tokens <= 2200 and ctx.budget == 2200
    dropped = [d.reason for s in ctx.sections for d in s.dropped]
    assert "budget" in dropped or "total_budget" in dropped


async def test_memories_written_in_a_turn_carry_its_frame_and_censors(nous: Nous) -> None:
    await nous.add_censor("drop table", action="block", reason="no destructive SQL")
    await nous.pre_turn("s", "I'm getting a KeyError when I run the import script", at=T0)
    await nous.post_turn("s", "The key 'sku' is missing from row 12.", at=T0)
    turns = await nous.memories("turn")
    assert turns and all(t.encoded_frame == "debug" and t.encoded_censors for t in turns)
    state = await nous.session("s")
    assert state.frame == "debug" and len(state.active_censors) == 1


async def test_identity_is_versioned_with_history(nous: Nous) -> None:
    first = await nous.set_identity("values", "Honesty first.")
    second = await nous.set_identity("values", "Honesty first; then kindness.")
    assert (first.version, second.version) == (1, 2)
    history = await nous.cognitive.identity.history("values")
    assert [h.action for h in history] == ["create", "update"]
    assert history[1].old_value == {"content": "Honesty first."}
    with pytest.raises(InvalidInputError, match="budget"):
        await nous.set_identity("boundaries", "Never do anything unsafe. " * 40)
    with pytest.raises(InvalidInputError, match="unknown identity section"):
        await nous.set_identity("mood", "cheerful")


async def test_ingest_ends_each_session_as_a_live_session_ends(nous: Nous, tmp_path: Path) -> None:
    conversation = {
        "id": "c1",
        "sessions": [
            {
                "id": "s1",
                "started_at": "2026-02-01T10:00:00Z",
                "messages": [
                    {
                        "id": "m1",
                        "role": "user",
                        "content": "Please remember that my bike is a blue Brompton.",
                    },
                    {"id": "m2", "role": "assistant", "content": "Noted: a blue Brompton."},
                ],
            },
            {
                "id": "s2",
                "started_at": "2026-02-02T10:00:00Z",
                "messages": [{"id": "m3", "role": "user", "content": "hi"}],
            },
        ],
    }
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(conversation))
    await nous.ingest(path)
    ended = await nous.sessions(ended=True)
    s1, s2 = (ingested_session_key(None, "c1", s) for s in ("s1", "s2"))
    assert {s.session_id for s in ended} == {s1, s2}
    first = next(s for s in ended if s.session_id == s1)
    assert first.turn_count == 1 and first.remember and first.episode_id is not None
    second = next(s for s in ended if s.session_id == s2)
    assert second.is_trivial() and second.episode_id is not None
    assert (await nous.get(second.episode_id)).active is False
    assert await nous.sessions(ended=False) == []


async def test_a_users_context_holds_their_memories_and_shared_ones_never_another_users(nous: Nous) -> None:
    shared = (await nous.learn("The office wifi password is on the fridge door.")).memory
    bob = (await nous.learn("Bob keeps his wifi router in the garage.", user_id="bob")).memory
    alice = (await nous.learn("Alice's home wifi is called Heron.", user_id="alice")).memory
    ids = {h.id for h in await nous.recall("where is the wifi information?", user_id="alice", limit=10)}
    assert {shared.id, alice.id} <= ids and bob.id not in ids
    ctx = await nous.pre_turn("s", "Where is the wifi information?", user_id="alice")
    assert shared.id in ctx.included_ids() and bob.id not in ctx.included_ids()


async def test_recall_recent_by_hours(nous: Nous) -> None:
    now = datetime.now(UTC)
    old = await nous.start_episode("Planning the garden beds", started_at=now - timedelta(hours=30))
    new = await nous.start_episode("Fixing the bike brakes", started_at=now - timedelta(hours=2))
    assert [e.id for e in await nous.recall_recent(hours=24)] == [new.id]
    assert {e.id for e in await nous.recall_recent(hours=48)} == {old.id, new.id}
    with pytest.raises(InvalidInputError):
        await nous.recall_recent(hours=-1)
    with pytest.raises(InvalidInputError):
        await nous.recall_recent(hours=5, since=now)


async def test_concurrent_ends_close_the_episode_and_learn_the_reflection_once(nous: Nous) -> None:
    await _exchange(nous, "race", "Help me plan the ski trip to Verbier in March", LONG_REPLY, T0)
    await _exchange(nous, "race", "Which ski passes should we buy?", LONG_REPLY, T0 + timedelta(minutes=1))
    ends = await asyncio.gather(
        *(nous.end_session("race", reflection="Book ski passes online, a week ahead.") for _ in range(4))
    )
    assert sum(e.ended_now for e in ends) == 1
    closed = [e.episode for e in ends if e.episode is not None]
    assert len(closed) == 1 and closed[0].ended_at is not None
    assert all(e.session.ended for e in ends)
    lessons = [f for f in await nous.memories("fact") if f.category == "lesson"]
    assert [f.content for f in lessons] == ["Book ski passes online, a week ahead."]


async def test_two_instances_opening_one_session_share_one_episode(
    database_url: str, settings: Settings, provider: EmbeddingProvider
) -> None:
    """Two engines on one store (as two processes would be) start the same session at once: one
    episode is opened and both turns are counted in the one session row."""
    async with (
        Nous(settings, database_url=database_url, embedding_provider=provider) as a,
        Nous(settings, database_url=database_url, embedding_provider=provider) as b,
    ):
        first, second = await asyncio.gather(
            a.pre_turn("shared", "Help me plan the ski trip to Verbier in March", at=T0),
            b.pre_turn("shared", "Also book the chalet near the lifts for six people", at=T0),
        )
        assert first.episode_id is not None and first.episode_id == second.episode_id
        assert sorted([first.episode_action, second.episode_action]) == ["already_open", "created"]
        episodes = [e for e in await a.memories("episode") if e.active]
        assert [e.id for e in episodes] == [first.episode_id]
        state = await b.session("shared")
        assert state.episode_id == first.episode_id and not state.ended


async def test_a_small_budget_holds_evidence_when_the_fixed_sections_are_short(nous: Nous) -> None:
    """The fixed sections take what they use: with none of them set, a 1,000-token context still
    shows the fact that answers, and never exceeds its total."""
    await nous.learn("Alice moved to Lisbon in March to work at the aquarium")
    for i in range(40):
        await nous.learn(f"Filler note {i}: the team lunch rota for week {i} is posted on the wiki")
    turn = await nous.pre_turn("small", "Where did Alice move to?", budget=1000)
    assert turn.tokens <= 1000 and turn.budget == 1000
    assert "Lisbon" in turn.text
    shown = {s.name: s.budget for s in turn.sections}
    assert sum(b for name, b in shown.items() if name in ("facts", "decisions", "turns", "episodes")) <= 1000


async def test_a_small_budget_goes_to_the_sections_that_have_something(nous: Nous) -> None:
    """Only facts were found: at a 1,000-token total the facts section gets the room the empty
    decisions, procedures, episodes and turns sections would have taken, up to its own ceiling."""
    for i in range(40):
        await nous.learn(f"Project Falcon milestone {i} shipped with the reporting module, release {i}")
    turn = await nous.pre_turn("small", "What did Project Falcon ship?", budget=1000)
    assert turn.tokens <= 1000
    budgets = {s.name: s.budget for s in turn.sections}
    assert all(budgets.get(name, 0) == 0 for name in ("decisions", "procedures", "episodes", "turns"))
    fixed = sum(s.tokens for s in turn.sections if s.name in ("identity", "user_profile", "censors", "frame"))
    assert budgets["facts"] >= 1000 - fixed - 60  # nearly all that the fixed sections left
    facts = turn.section("facts")
    assert facts is not None and len(facts.items) >= 10
