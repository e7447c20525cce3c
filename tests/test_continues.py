"""A speaker goes on across the other's reply: "Check out my painting!" / "What made you go for
it?" / "It came to me after a visit to the community centre". The answer is the same speaker's
turn two steps from the best match, and the re-ranker's ``continues`` feature lifts it."""

from __future__ import annotations

import json

import pytest

from nous import Nous
from nous.ingest import parse_conversation
from nous.retrieval import rerank
from nous.retrieval.rerank import FEATURE_WEIGHTS

ASKED = "What inspired Caroline's painting for the art show?"
ANSWER = "Thanks! It came to me after a visit to the community centre, everyone there was so united."


def _chat(*, melanie_twice: bool = False) -> str:
    show = [
        ("Caroline", "Check out my painting for the art show next month! I finished it last night."),
        ("Melanie", "Wow, the colours are stunning. What made you go for it?"),
        *([("Melanie", "I love the way the light falls on the figures.")] if melanie_twice else []),
        ("Caroline", ANSWER),
        ("Melanie", "That's beautiful, you should be proud."),
    ]
    # Caroline's other lines about art, each in a session of its own between two of Melanie's.
    other = [
        "I bought new brushes and paints for the art class on Tuesday.",
        "The gallery downtown has a new art show, we should go sometime.",
        "I sketched the harbour at sunset for my art portfolio.",
    ]
    chats = [
        [
            ("Melanie", "The kids and I went camping last weekend."),
            ("Caroline", line),
            ("Melanie", "Sounds fun!"),
        ]
        for line in other
    ]
    days = ["2026-03-02", "2026-03-04", "2026-03-06", "2026-03-09"]
    sessions = [
        {
            "id": f"s{n}",
            "started_at": f"{day}T18:00:00+00:00",
            "messages": [
                {"id": f"s{n}:{i}", "role": "user", "name": name, "content": text}
                for i, (name, text) in enumerate(lines)
            ],
        }
        for n, (day, lines) in enumerate(zip(days, [*chats, show], strict=True))
    ]
    return json.dumps({"id": "friends", "sessions": sessions})


def test_the_feature_is_fitted_not_switched_off() -> None:
    assert dict(FEATURE_WEIGHTS)["continues"] > 0


async def test_the_same_speakers_next_turn_after_the_reply_is_lifted(
    nous: Nous, monkeypatch: pytest.MonkeyPatch
) -> None:
    await nous.ingest(parse_conversation(_chat()))
    hits = await nous.recall(ASKED, limit=10, min_score=0)
    texts = [h.content.split(": ", 1)[-1] for h in hits]
    assert ANSWER in texts, texts
    answer = hits[texts.index(ANSWER)]
    assert answer.signals.get("continues") == pytest.approx(1.0, abs=0.05)  # the best match goes on
    assert texts.index(ANSWER) < 5, texts
    # The reply between the two is one step away: a neighbour, not the speaker going on.
    reply = hits[texts.index("Wow, the colours are stunning. What made you go for it?")]
    assert "continues" not in reply.signals
    # Without the feature's weight the same answer scores lower and ranks no higher.
    column = rerank.FEATURES.index("continues")
    weights = rerank.WEIGHTS.copy()
    weights[column] = 0.0
    scored = rerank.score
    monkeypatch.setattr(rerank, "score", lambda matrix: scored(matrix, weights))
    without = await nous.recall(ASKED, limit=10, min_score=0)
    ids = [h.id for h in without]
    assert answer.id not in ids or (
        ids.index(answer.id) >= texts.index(ANSWER)
        and without[ids.index(answer.id)].score < answer.score * 0.7
    )


async def test_another_speakers_turn_two_steps_away_is_not_lifted(nous: Nous) -> None:
    # Melanie speaks twice: two steps from Caroline's best match is Melanie's, not Caroline's.
    await nous.ingest(parse_conversation(_chat(melanie_twice=True)))
    hits = await nous.recall(ASKED, limit=20, min_score=0)
    assert hits and hits[0].content.startswith("Caroline: Check out my painting")
    second = next(h for h in hits if h.content.endswith("I love the way the light falls on the figures."))
    assert "continues" not in second.signals


def test_the_inspector_says_why_it_ranked() -> None:
    from nous.server.ui.routes import _why

    why = _why({"keyword_rank": 4.0, "continues": 0.98, "rerank": 0.4})
    assert why == ["found by keywords (#4)", "its speaker goes on from another hit"]


async def test_a_user_known_by_role_alone_is_not_lifted(nous: Nous) -> None:
    # In an agent's own chat the user's next message after the reply is a new request.
    lines = [
        ("user", "Check out my painting for the art show next month! I finished it last night."),
        ("assistant", "The colours are stunning. What made you go for it?"),
        ("user", ANSWER),
        ("assistant", "That's lovely."),
    ]
    chat = {
        "id": "own-chat",
        "sessions": [
            {
                "id": "s1",
                "started_at": "2026-03-09T18:00:00+00:00",
                "messages": [
                    {"id": f"s1:{i}", "role": role, "content": text} for i, (role, text) in enumerate(lines)
                ],
            }
        ],
    }
    await nous.ingest(parse_conversation(json.dumps(chat)))
    hits = await nous.recall(ASKED, limit=10, min_score=0)
    answer = next(h for h in hits if h.content.endswith(ANSWER))
    assert hits[0].content.endswith(lines[0][1])
    assert "continues" not in answer.signals
