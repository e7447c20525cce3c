"""Fusion never falls below the useful signal, with real text and the real model.

Two stores where one signal is useless: one where each question shares only a name with the
memories (keyword search sees ties, meaning decides), one of near-identical tickets told apart only by
their codes (the embedding cannot tell them apart, the words can). Default recall must do at
least as well as the useful signal alone (its preset), and the useless one must really be worse,
or the store would prove nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from nous import InvalidInputError, Nous

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)

# People with a few memories each; each question shares only the person's name with the store,
# so keyword search sees ties among that person's memories (useless), while meaning decides.
PEOPLE: dict[str, list[tuple[str | None, str]]] = {
    "Dana": [
        ("What pet does Dana own?", "Dana adopted a golden retriever puppy from the shelter in spring."),
        ("What is Dana's job?", "Dana works night shifts as a nurse at the children's hospital."),
        (None, "Dana's sister teaches chemistry in Leeds."),
    ],
    "Marco": [
        ("How does Marco get to the office?", "Marco cycles to work along the river path every morning."),
        ("Which musical instrument is Marco into?", "Marco is the bassist of a jazz trio on Fridays."),
        (None, "Marco is allergic to shellfish."),
    ],
    "Priya": [
        ("What food does Priya hate?", "Priya can't stand mushrooms and picks them off every pizza."),
        ("Where does Priya live?", "Priya moved into a flat near the canal."),
        ("What race is Priya preparing for?", "Priya is training for the Berlin marathon."),
    ],
    "Omar": [
        ("Where does Omar go to relax?", "Omar unwinds at his family's lake cabin every weekend."),
        ("What language is Omar studying?", "Omar is learning Japanese with an app on his phone."),
        ("What car does Omar have?", "Omar drives an old red Volvo estate."),
    ],
}

CITIES = ["Berlin", "Munich", "Hamburg", "Cologne", "Vienna", "Zurich", "Prague", "Warsaw"]
CODES = [
    "INC48213",
    "INC90577",
    "INC13042",
    "INC66190",
    "INC27735",
    "INC85408",
    "INC51926",
    "INC39861",
]


async def _top1(nous: Nous, queries: list[tuple[str, str]], preset: str | None) -> int:
    """How many queries have their answer first."""
    found = 0
    for query, answer_id in queries:
        hits = await nous.recall(query, limit=3, preset=preset, reinforce=False, now=NOW)
        found += bool(hits) and hits[0].id == answer_id
    return found


async def test_fusion_keeps_up_with_dense_when_keywords_are_useless(nous: Nous) -> None:
    queries: list[tuple[str, str]] = []
    for memories in PEOPLE.values():
        for query, content in memories:
            kept = await nous.learn(content, dedup=False)
            if query:
                queries.append((query, kept.id))
    dense = await _top1(nous, queries, "dense-only")
    keyword = await _top1(nous, queries, "keyword-only")
    fused = await _top1(nous, queries, None)
    assert keyword < dense, (keyword, dense)  # the store really leaves keywords useless
    assert fused >= dense, (fused, dense)


async def test_fusion_keeps_up_with_keywords_when_embeddings_cannot_tell(nous: Nous) -> None:
    queries = []
    for code, city in zip(CODES, CITIES, strict=True):
        ticket = await nous.learn(
            f"Ticket {code}: the invoice export times out for the {city} tenant.", dedup=False
        )
        queries.append((f"what is {code} about?", ticket.id))
    dense = await _top1(nous, queries, "dense-only")
    keyword = await _top1(nous, queries, "keyword-only")
    fused = await _top1(nous, queries, None)
    assert dense < keyword, (dense, keyword)  # the store really defeats the embedding
    assert fused >= keyword, (fused, keyword)


async def test_recency_applies_only_to_questions_about_what_is_recent(nous: Nous) -> None:
    old = await nous.learn(
        "The team lunch is at the noodle bar on Main Street",
        occurred_at=NOW - timedelta(days=90),
        dedup=False,
    )
    new = await nous.learn(
        "The team lunch is at the noodle bar on Oak Street", occurred_at=NOW - timedelta(days=1), dedup=False
    )
    plain = await nous.recall("where is the team lunch?", now=NOW, limit=2)
    assert {h.id for h in plain} == {old.id, new.id}
    assert all("recency" not in h.signals for h in plain)
    latest = await nous.recall("where is the team lunch now?", now=NOW, limit=2)
    assert [h.id for h in latest] == [new.id, old.id]
    assert latest[0].signals["recency"] > latest[1].signals.get("recency", 0.0)


async def test_unknown_preset_is_a_typed_error(nous: Nous) -> None:
    await nous.learn("Deploys happen on Tuesdays")
    with pytest.raises(InvalidInputError, match="unknown recall preset 'fastest'"):
        await nous.recall("when are deploys?", preset="fastest")
    hits = await nous.recall("when are deploys?", preset="keyword-only")
    assert hits and all("dense" not in h.signals for h in hits)
    hits = await nous.recall("when are deploys?", preset="dense-only")
    assert hits and all("keyword" not in h.signals for h in hits)


def test_keyword_cover_counts_query_words_that_occur_together() -> None:
    from nous.retrieval.rerank import PASSAGE_CHARS, coverage, stem

    terms = {stem(w) for w in ("invoice", "currency", "rounding")}
    filler = "Unrelated notes about the weather and the garden. " * 10
    together = filler + "The invoice shows a currency rounding error of one cent. " + filler
    scattered = "The invoice arrived. " + filler + "The currency changed. " + filler + "Rounding was off."
    assert len(scattered) > PASSAGE_CHARS * 2
    found, share = coverage(together, terms)
    assert found == terms and share == pytest.approx(1.0)
    found, share = coverage(scattered, terms)
    assert found == terms and share == pytest.approx(1 / 3)
    short = "Rounding the invoice currency."  # a short text is one window
    assert coverage(short, terms)[1] == pytest.approx(1.0)
    assert coverage(short, set()) == (set(), 0.0)
    huge = "q" * (PASSAGE_CHARS + 50)  # one word longer than the window still counts alone
    assert coverage(filler + huge + " invoice", {*terms, stem(huge)})[1] == pytest.approx(1 / 4)
