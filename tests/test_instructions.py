"""Standing instructions: "Always give grams when I ask about recipes", said once, is stored as an
instruction and recalled for a later question it applies to, which shares few of its words."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nous import Nous
from nous.ingest import parse_conversation
from nous.language.instructions import INSTRUCTION, is_standing_instruction
from tests.cli_support import data, ok

RULE = "Always give ingredient quantities in grams when I ask about recipes."
BAKING = [
    "My sourdough starter doubled overnight, it smells great.",
    "I baked a rye loaf yesterday but the crumb was dense.",
    "Should I cold-proof the dough in the fridge for a more open crumb?",
    "The oven runs hot, so I lowered it for the cinnamon buns.",
    "I tried a poolish for the baguettes and they came out crispy.",
    "Which flour makes the chewiest bagels, bread flour or all-purpose?",
    "My banana bread sank in the middle again.",
    "I want to try laminating dough for croissants this weekend.",
    "The pizza stone cracked when I put it in a hot oven.",
    "How long should brioche rise before shaping?",
]
ASKED = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


def _chat() -> str:
    """The rule in the first session, then four sessions of baking talk that never mention grams."""
    sessions = [
        {
            "id": "s0",
            "started_at": "2026-03-02T09:00:00+00:00",
            "messages": [
                {"id": "s0:0", "role": "user", "content": "Hi! I'm getting into baking this spring."},
                {"id": "s0:1", "role": "assistant", "content": "Lovely, happy to help."},
                {"id": "s0:2", "role": "user", "content": RULE},
                {"id": "s0:3", "role": "assistant", "content": "Noted: grams from now on."},
            ],
        }
    ]
    for n in range(1, 5):
        messages = []
        for i, text in enumerate(BAKING):
            messages.append({"id": f"s{n}:{2 * i}", "role": "user", "content": f"{text} (week {n})"})
            messages.append({"id": f"s{n}:{2 * i + 1}", "role": "assistant", "content": "Good question."})
        sessions.append(
            {"id": f"s{n}", "started_at": f"2026-03-{2 + 7 * n:02d}T09:00:00+00:00", "messages": messages}
        )
    return json.dumps({"id": "baking", "sessions": sessions})


@pytest.mark.parametrize(
    ("text", "standing"),
    [
        (RULE, True),
        ("Never use jQuery in my examples.", True),
        ("Please always answer in French.", True),
        ("From now on, call me Sam.", True),
        ("Whenever I ask about deadlines, remind me of the date.", True),
        ("Always good to hear! See you later!", False),  # no verb after "always"
        ("Never mind.", False),
        ("Never been to Lisbon.", False),
        ("Whenever I go hiking I feel great.", False),  # a habit, not an instruction
        ("Can you always check my units?", False),  # a question
    ],
)
def test_a_standing_instruction_is_told_from_a_statement(text: str, standing: bool) -> None:
    assert is_standing_instruction(text) is standing


@pytest.mark.parametrize("user", ["dana", None])
async def test_the_context_shows_a_standing_instruction_for_a_question_it_applies_to(
    nous: Nous, user: str | None
) -> None:
    """Said once among forty baking messages, the rule is in the context of a later recipe
    question, which shares none of its words, whether the chat is a user's or the agent's own."""
    await nous.ingest(parse_conversation(_chat()), user_id=user)
    turns = await nous.memories("turn", user_id=user, limit=200)
    told = [t for t in turns if t.category == INSTRUCTION]
    assert [t.content for t in told] == [f"user: {RULE}"]  # the rule, and no baking message
    context = await nous.pre_turn("later", "How do I make a focaccia?", user_id=user, at=ASKED)
    profile = next(s for s in context.sections if s.name == "user_profile")
    assert [i.text for i in profile.items] == [f"- Standing instruction (2026-03-02): {RULE}"]
    assert f"## About the user\n- Standing instruction (2026-03-02): {RULE}" in context.text
    assert context.text.count(RULE) == 1  # not again among the retrieved turns
    # the store as it stood before the rule was said: no rule in the context
    before = datetime(2026, 3, 1, tzinfo=UTC)
    early = await nous.preview_turn("How do I make a focaccia?", user_id=user, at=before, as_of=before)
    assert RULE not in early.text


async def test_an_instruction_said_in_a_turn_is_stored_as_one(nous: Nous) -> None:
    for said in ("From now on, give me temperatures in Celsius.", "What should I wear today?"):
        await nous.pre_turn("s1", said, user_id="dana")
        await nous.post_turn("s1", "Noted.")
    turns = await nous.memories("turn", user_id="dana", limit=10)
    assert {t.content: t.category for t in turns if t.content.startswith("user:")} == {
        "user: From now on, give me temperatures in Celsius.": INSTRUCTION,
        "user: What should I wear today?": None,
    }
    # the rule is dana's: in her next session's context, not in another user's nor the agent's own
    rule = "Standing instruction"
    assert rule in (await nous.pre_turn("s2", "Should I take a coat?", user_id="dana")).text
    assert rule not in (await nous.pre_turn("s3", "Should I take a coat?", user_id="bob")).text
    assert rule not in (await nous.pre_turn("s4", "Should I take a coat?")).text


async def test_maintain_marks_the_rules_of_a_store_ingested_before_rules_were_marked(
    nous: Nous, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store ingested by a version that did not mark rules lists none; ``maintain`` marks them
    (audited), once, and leaves alone a turn whose category someone has cleared."""
    with monkeypatch.context() as older:
        older.setattr("nous.ingest.ingest.message_category", lambda role, text: None)
        await nous.ingest(parse_conversation(_chat()), user_id="dana")
    turns = await nous.memories("turn", user_id="dana", limit=200)
    assert not [t for t in turns if t.category == INSTRUCTION]
    question = "How do I make a focaccia?"
    assert "Standing instruction" not in (await nous.preview_turn(question, user_id="dana", at=ASKED)).text

    report = await nous.maintain(now=ASKED)
    assert report.instructions_marked == 1
    turns = await nous.memories("turn", user_id="dana", limit=200)
    (rule,) = [t for t in turns if t.category == INSTRUCTION]
    assert rule.content == f"user: {RULE}"
    marked = (await nous.history(rule.id))[-1]
    assert (marked.actor, marked.old_value, marked.new_value) == (
        "maintain",
        {"category": None},
        {"category": INSTRUCTION},
    )
    context = await nous.preview_turn(question, user_id="dana", at=ASKED)
    assert f"## About the user\n- Standing instruction (2026-03-02): {RULE}" in context.text
    assert (await nous.maintain(now=ASKED)).instructions_marked == 0

    await nous.update(rule.id, category=None)  # somebody decided it is no rule
    assert (await nous.maintain(now=ASKED)).instructions_marked == 0
    assert (await nous.get(rule.id)).category is None


async def test_maintain_leaves_a_forgotten_rule_alone(nous: Nous, monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as older:
        older.setattr("nous.ingest.ingest.message_category", lambda role, text: None)
        await nous.ingest(parse_conversation(_chat()), user_id="dana")
    (rule,) = [t for t in await nous.memories("turn", user_id="dana", limit=200) if RULE in t.content]
    await nous.forget(rule.id)
    assert (await nous.maintain(now=ASKED)).instructions_marked == 0
    forgotten = await nous.history(rule.id)
    assert not [e for e in forgotten if e.actor == "maintain"]


def test_nous_maintain_says_what_it_marked(
    cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(_chat(), encoding="utf-8")
    with monkeypatch.context() as older:
        older.setattr("nous.ingest.ingest.message_category", lambda role, text: None)
        ok(cli, "ingest", str(chat), "--user", "dana")
    said = ok(cli, "maintain").output
    assert 'marked 1 earlier turn as a standing instruction (listed under "About the user"' in " ".join(
        said.split()
    )
    assert data(cli, "maintain")["instructions_marked"] == 0
    context = ok(cli, "context", "How do I make a focaccia?", "--user", "dana", "--session", "later").output
    assert "Standing instruction (2026-03-02)" in context
