"""Censors enforced on actions: decisions, semantic matches, escalation, overrides, management,
pattern safety and the CLI. Every ``nous`` test runs on SQLite and PostgreSQL with the real model."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from nous import (
    ActionCheck,
    ActionDecision,
    Censor,
    CensorAction,
    CensorMatch,
    InvalidInputError,
    Nous,
)
from nous._patterns import pattern_matches
from nous.cli.app import app
from nous.embeddings.base import EmbeddingProvider
from nous.heart import censor_rules
from nous.heart.censor_rules import SEMANTIC_THRESHOLD, validate_pattern
from nous.models import HistoryAction

from .censor_calibration import SHOULD_MATCH, SHOULD_NOT_MATCH, cross_similarities, regex_fires, similarities

DROP = r"DROP\s+TABLE"
DROP_REASON = "never drop tables in the production database"


async def _add(nous: Nous, pattern: str, **fields: Any) -> Censor:
    result = await nous.add_censor(pattern, **fields)
    assert isinstance(result.memory, Censor)
    return result.memory


# -- decisions ---------------------------------------------------------------------------------------
async def test_block_censor_blocks_a_matching_action_with_its_reason(nous: Nous) -> None:
    censor = await _add(nous, DROP, action="block", reason=DROP_REASON)
    verdict = await nous.check_action("psql -c 'drop   table customers;'")
    assert isinstance(verdict, ActionCheck) and verdict.decision is ActionDecision.BLOCK
    (match,) = verdict.matches
    assert isinstance(match, CensorMatch) and match.censor.id == censor.id
    assert match.action is CensorAction.BLOCK and match.how == "pattern" and not match.escalated
    assert DROP_REASON in match.reason and DROP_REASON in verdict.reasons[0]
    assert (await nous.get(censor.id)).activation_count == 1  # type: ignore[attr-defined]


async def test_semantic_match_without_a_pattern_match(nous: Nous) -> None:
    pattern, reason = r"disable 2fa", "two-factor authentication must stay on for admins"
    censor = await _add(nous, pattern, action="block", reason=reason)
    action = "turn off the second login factor for the admin account"
    assert not re.search(pattern, action, flags=re.IGNORECASE)
    verdict = await nous.check_action(action)
    assert verdict.decision is ActionDecision.BLOCK
    (match,) = verdict.matches
    assert match.censor.id == censor.id and match.how == "semantic"
    assert match.similarity is not None and match.similarity >= SEMANTIC_THRESHOLD
    assert reason in match.reason


async def test_unrelated_and_same_topic_harmless_actions_are_allowed(nous: Nous) -> None:
    censor = await _add(nous, DROP, action="block", reason=DROP_REASON)
    await _add(nous, r"chmod\s+777", action="warn", reason="world-writable permissions are a security hole")
    for action in ("water the office plants", "add a column to the orders table in staging"):
        verdict = await nous.check_action(action)
        assert verdict.decision is ActionDecision.ALLOW and verdict.matches == [] and verdict.reasons == []
    assert (await nous.get(censor.id)).activation_count == 0  # type: ignore[attr-defined]


async def test_warn_escalates_to_block_after_the_threshold(nous: Nous) -> None:
    censor = await _add(
        nous, r"git\s+push\s+(-f|--force)", reason="rewrites shared history", escalation_threshold=2
    )
    first = await nous.check_action("git push --force origin main", session_id="s-1")
    assert first.decision is ActionDecision.WARN and not first.matches[0].escalated
    second = await nous.check_action("git push -f origin main", session_id="s-1")
    assert second.decision is ActionDecision.BLOCK
    assert second.matches[0].escalated and second.matches[0].action is CensorAction.BLOCK
    assert "escalated" in second.reasons[0]
    third = await nous.check_action("git push -f origin dev")
    assert third.decision is ActionDecision.BLOCK and not third.matches[0].escalated
    stored = await nous.get(censor.id)
    assert isinstance(stored, Censor) and stored.action is CensorAction.BLOCK and stored.activation_count == 3
    activations = [h for h in await nous.history(censor.id) if h.new_value and "activation" in h.new_value]
    assert len(activations) == 3 and activations[0].new_value["activation"]["session_id"] == "s-1"  # type: ignore[index]
    assert activations[1].new_value == {
        "activation_count": 2,
        "action": "block",
        "activation": activations[1].new_value["activation"],  # type: ignore[index]
    }
    # escalation stops at block: absolute is only ever set by a person
    await nous.check_action("git push --force", record=True)
    assert (await nous.get(censor.id)).action is CensorAction.BLOCK  # type: ignore[attr-defined]


async def test_override_lifts_a_block_but_never_an_absolute(nous: Nous) -> None:
    await _add(nous, DROP, action="block", reason=DROP_REASON)
    await _add(nous, r"rm\s+-rf\s+/", action="absolute", reason="destroys the host filesystem")
    assert (await nous.check_action("DROP TABLE t", record=False)).decision is ActionDecision.BLOCK
    lifted = await nous.check_action("DROP TABLE t", override=True, record=False)
    assert lifted.decision is ActionDecision.WARN and lifted.overridden
    refused = await nous.check_action("sudo rm -rf / --no-preserve-root", override=True, record=False)
    assert refused.decision is ActionDecision.BLOCK and not refused.overridden
    assert refused.matches[0].action is CensorAction.ABSOLUTE
    assert any("cannot be overridden" in r for r in refused.reasons)
    both = await nous.check_action("DROP TABLE t; rm -rf /", override=True, record=False)
    assert both.decision is ActionDecision.BLOCK and len(both.matches) == 2


async def test_concurrent_checks_lose_no_activation(nous: Nous) -> None:
    censor = await _add(nous, DROP, action="block", reason=DROP_REASON, escalation_threshold=50)
    await asyncio.gather(*(nous.check_action(f"DROP TABLE t{i}") for i in range(6)))
    assert (await nous.get(censor.id)).activation_count == 6  # type: ignore[attr-defined]


# -- management --------------------------------------------------------------------------------------
async def test_false_positive_is_counted_and_in_history(nous: Nous) -> None:
    censor = await _add(nous, DROP, action="block", reason=DROP_REASON)
    updated = await nous.report_false_positive(censor.id[:8], note="fired on a migration doc")
    assert updated.false_positive_count == 1
    assert (await nous.report_false_positive(censor.id)).false_positive_count == 2
    stored = await nous.get(censor.id)
    assert isinstance(stored, Censor) and stored.false_positive_count == 2  # kept in the data column
    rows = [h for h in await nous.history(censor.id) if h.new_value and "false_positive" in h.new_value]
    assert [(r.old_value, r.new_value) for r in rows] == [
        (
            {"false_positive_count": 0},
            {"false_positive_count": 1, "false_positive": "fired on a migration doc"},
        ),
        ({"false_positive_count": 1}, {"false_positive_count": 2, "false_positive": ""}),
    ]
    assert [c.false_positive_count for c in await nous.censors()] == [2]


async def test_edit_changes_matching_and_writes_history(nous: Nous) -> None:
    censor = await _add(nous, DROP, action="block", reason=DROP_REASON)
    before = await nous.check_action("TRUNCATE TABLE audit_log", record=False)
    assert "pattern" not in [m.how for m in before.matches]
    edited = await nous.edit_censor(
        censor.id, trigger_pattern=r"TRUNCATE\s+TABLE", action="warn", reason="audit logs are kept by law"
    )
    assert edited.trigger_pattern == r"TRUNCATE\s+TABLE" and edited.action is CensorAction.WARN
    assert edited.content == r"TRUNCATE\s+TABLE — audit logs are kept by law"
    after = await nous.check_action("TRUNCATE TABLE audit_log", record=False)
    assert after.decision is ActionDecision.WARN and after.matches[0].how == "pattern"
    assert "audit logs are kept by law" in after.reasons[0]
    assert "pattern" not in [m.how for m in (await nous.check_action("DROP TABLE x", record=False)).matches]
    row = (await nous.history(censor.id))[-1]
    assert row.action is HistoryAction.UPDATE
    assert row.old_value is not None and row.new_value is not None
    assert (
        row.old_value["trigger_pattern"] == DROP and row.new_value["trigger_pattern"] == r"TRUNCATE\s+TABLE"
    )
    assert row.old_value["action"] == "block" and row.new_value["action"] == "warn"
    with pytest.raises(InvalidInputError):
        await nous.edit_censor(censor.id)


async def test_an_edit_keeps_the_activation_count_unless_asked_to_reset_it(nous: Nous) -> None:
    censor = await _add(
        nous, r"rm\s+-rf\s+/", action="warn", reason="destroys the host", escalation_threshold=5
    )
    for _ in range(2):
        await nous.check_action("rm -rf /")
    kept = await nous.edit_censor(censor.id, action="block")
    assert kept.action is CensorAction.BLOCK and kept.activation_count == 2
    assert (await nous.history(censor.id))[-1].new_value == {"action": "block"}
    same = await nous.edit_censor(censor.id, action="block")  # nothing changes: nothing written
    assert same.updated_at == kept.updated_at
    reset = await nous.edit_censor(censor.id, reset_activations=True)
    assert reset.activation_count == 0 and reset.action is CensorAction.BLOCK
    assert (await nous.history(censor.id))[-1].old_value == {"activation_count": 2}


async def test_meaning_catches_a_paraphrase_but_not_the_patterns_own_command(nous: Nous) -> None:
    """The two cases of issue 31: a pattern's near miss is the pattern's to judge, and a censor's
    reason catches what its regex cannot."""
    await _add(nous, r"rm\s+-rf\s+/", action="block", reason="destroys the host filesystem")
    await _add(nous, DROP, action="block", reason=DROP_REASON)
    assert (await nous.check_action("rm -rf ./build", record=False)).decision is ActionDecision.ALLOW
    assert (
        await nous.check_action("rm -rf / --no-preserve-root", record=False)
    ).decision is ActionDecision.BLOCK
    verdict = await nous.check_action("please delete the users table", record=False)
    assert verdict.decision is ActionDecision.BLOCK and [m.how for m in verdict.matches] == ["semantic"]
    assert "similar in meaning" in verdict.reasons[0] and DROP_REASON in verdict.reasons[0]


async def test_an_opposite_or_read_only_action_is_not_blocked_by_meaning(nous: Nous) -> None:
    await _add(nous, r"disable\s+(2fa|mfa)", action="block", reason="two-factor auth must stay on for admins")
    for harmless in ("enable mfa for the new support agent", "check whether mfa is on for the admins"):
        assert (await nous.check_action(harmless, record=False)).decision is ActionDecision.ALLOW
    verdict = await nous.check_action("turn off the second login factor for the administrator", record=False)
    assert verdict.decision is ActionDecision.BLOCK and [m.how for m in verdict.matches] == ["semantic"]


def test_the_command_a_pattern_starts_with() -> None:
    assert censor_rules.pattern_command(r"rm\s+-rf\s+/") == "rm"
    assert censor_rules.pattern_command(r"^\bkubectl\s+delete") == "kubectl"
    assert censor_rules.pattern_command(r"colou?r") is None  # the word is not whole
    assert censor_rules.pattern_command(r"(api[_-]?key|secret)") is None
    assert censor_rules.same_command(r"rm\s+-rf\s+/", "sudo RM -rf ./build")
    assert not censor_rules.same_command(r"rm\s+-rf\s+/", "wipe the root disk; confirm")


async def test_retired_censor_never_matches_and_keeps_its_history(nous: Nous) -> None:
    censor = await _add(nous, DROP, action="absolute", reason=DROP_REASON)
    assert (await nous.check_action("DROP TABLE x")).decision is ActionDecision.BLOCK
    retired = await nous.retire_censor(censor.id, reason="the legacy database is gone")
    assert not retired.active
    for text in ("DROP TABLE x", "delete the customers table from the prod database"):
        assert (await nous.check_action(text)).matches == []
    assert await nous.censors() == []
    history = await nous.history(censor.id)
    assert [h.action for h in history] == [HistoryAction.CREATE, HistoryAction.UPDATE, HistoryAction.DELETE]
    assert history[-1].new_value == {"active": False, "retired": "the legacy database is gone"}
    assert (await nous.get(censor.id)).activation_count == 1  # type: ignore[attr-defined]


# -- pattern safety and input ---------------------------------------------------------------------------
BAD_PATTERNS = {
    "[unclosed": "not a valid regular expression",
    "(a+)+": "nests a quantifier",
    "(a*)*": "nests a quantifier",
    "(.*)*": "nests a quantifier",
    r"(\w+\s?)+$": "nests a quantifier",
    "x*": "matches empty text",
    # alternatives that can match the same text, repeated: each doubles the ways a failing match
    # is retried (no quantifier is nested, so the check above lets them through)
    "(a|a)" * 20 + "c": "alternatives that can match the same text",
    "(a|a){20}c": "alternatives that can match the same text",
    "^(a|aa)+$": "alternatives that can match the same text",
    "(x|xy)*z": "alternatives that can match the same text",
}


@pytest.mark.parametrize("pattern", list(BAD_PATTERNS))
async def test_invalid_and_catastrophic_patterns_are_rejected(nous: Nous, pattern: str) -> None:
    with pytest.raises(InvalidInputError, match=BAD_PATTERNS[pattern]) as added:
        await nous.add_censor(pattern, action="block")
    assert added.value.field == "trigger_pattern"
    censor = await _add(nous, DROP, action="block", reason=DROP_REASON)
    with pytest.raises(InvalidInputError, match=BAD_PATTERNS[pattern]) as edited:
        await nous.edit_censor(censor.id, trigger_pattern=pattern)
    assert edited.value.field == "trigger_pattern"
    assert [c.trigger_pattern for c in await nous.censors()] == [DROP]


def test_safe_nesting_is_accepted() -> None:
    for pattern in (
        r"(?>a+)+b",
        r"(a++)+b",
        r"(ab?)+c",
        r"(\d{3}-)+\d",
        DROP,
        r"\b(rm|rmdir)\b",  # alike at the start, once: harmless
        r"(https?|ftp)://\S+",
        r"(delete|drop)\s+(table|database)",
        r"(foo|bar)+",
    ):
        assert validate_pattern(pattern) == pattern


async def test_100kb_adversarial_input_returns_promptly(nous: Nous) -> None:
    # stored before validation existed (written directly): two patterns that backtrack
    # exponentially on a long run of a's that ends badly
    slow = Censor(
        agent_id=nous.agent_id,
        content="^(a|aa)+$ — slow",
        trigger_pattern=r"^(a|aa)+$",
        action=CensorAction.WARN,
    )
    legacy = Censor(
        agent_id=nous.agent_id, content="(a+)+b — legacy", trigger_pattern="(a+)+b", action=CensorAction.BLOCK
    )
    await nous.add_many([slow, legacy])
    drop = await _add(nous, DROP, action="block", reason=DROP_REASON, dedup=False)
    adversarial = "a" * 99_999 + "!"
    assert len(adversarial.encode()) == 100_000
    verdict = await nous.check_action(adversarial, record=False)  # answers: the slow patterns time out
    # a pattern that runs out of time counts as matched (fail closed), and says so
    timed_out = {m.censor.id for m in verdict.matches if m.timed_out}
    assert timed_out == {slow.id, legacy.id}
    assert verdict.decision is ActionDecision.BLOCK and len(verdict.warnings) == 2
    assert drop.id not in {m.censor.id for m in verdict.matches}
    # a benign 100 KB text is read to the end: the forbidden command is found after 99 KB
    long = "select 1; " * 9_998 + "DROP TABLE x"
    found = await nous.check_action(long, record=False)
    assert drop.id in {m.censor.id for m in found.matches if m.how == "pattern"}


async def test_patterns_are_matched_off_the_event_loop(nous: Nous, monkeypatch: pytest.MonkeyPatch) -> None:
    """A slow pattern holds a worker thread, not the event loop every other request runs on."""
    threads: list[int] = []

    def recorded(pattern: str, text: str, *, timeout: float) -> bool | None:
        threads.append(threading.get_ident())
        return pattern_matches(pattern, text, timeout=timeout)

    monkeypatch.setattr(censor_rules, "pattern_matches", recorded)
    await _add(nous, DROP, action="block", reason=DROP_REASON)
    verdict = await nous.check_action("DROP TABLE users", record=False)
    assert verdict.decision is ActionDecision.BLOCK
    assert threads and threading.get_ident() not in threads


def test_pattern_timeout_is_bounded_without_a_store() -> None:
    # None: it ran out of time (a catastrophic pattern on 100,000 characters would not finish)
    assert pattern_matches("(a+)+b", "a" * 100_000, timeout=0.1) is None
    assert pattern_matches("[unclosed", "an [UNCLOSED bracket") is True  # legacy invalid: literal text


@pytest.mark.parametrize("text", ["", "   \n\t "])
async def test_empty_action_text_is_rejected(nous: Nous, text: str) -> None:
    await _add(nous, DROP, action="block", reason=DROP_REASON)
    with pytest.raises(InvalidInputError) as raised:
        await nous.check_action(text)
    assert raised.value.field == "action_text"


# -- calibration -----------------------------------------------------------------------------------------
def test_semantic_threshold_separates_the_calibration_pairs(provider: EmbeddingProvider) -> None:
    """The hand-written pairs of tests/censor_calibration.py on the real model."""
    assert regex_fires(SHOULD_MATCH + SHOULD_NOT_MATCH) == []  # only meaning can match them
    pos, neg = similarities(provider, SHOULD_MATCH), similarities(provider, SHOULD_NOT_MATCH)
    cross = cross_similarities(provider, SHOULD_MATCH)
    print(
        f"\nshould match: min {pos.min():.3f} median {np.median(pos):.3f} max {pos.max():.3f}; "
        f"should not: min {neg.min():.3f} median {np.median(neg):.3f} max {neg.max():.3f}; "
        f"cross max {cross.max():.3f}; caught at {SEMANTIC_THRESHOLD}: {int(np.sum(pos >= SEMANTIC_THRESHOLD))}"
        f"/{len(pos)}"
    )
    # Reading a censor's reason and its pattern's words apart catches 17 of the 22 paraphrases
    # (10 when they were embedded together), at the price of 3 same-topic harmless pairs ("fix a
    # typo on the pricing page" against "price change"); tests/test_censor_bench.py holds the
    # verdict figures on labelled actions, and docs/censors.md the held-out ones.
    assert np.sum(neg >= SEMANTIC_THRESHOLD) <= 3 and np.sum(cross >= SEMANTIC_THRESHOLD) <= 2
    assert np.sum(pos >= SEMANTIC_THRESHOLD) >= 2 * len(pos) // 3
    assert np.median(pos) > np.median(neg) + 0.15


# -- CLI -----------------------------------------------------------------------------------------------
def test_cli_censors_add_list_check_edit_retire(cli: CliRunner, database_url: str) -> None:
    def run(*args: str) -> Any:
        result = cli.invoke(app, ["--db", database_url, *args])
        blocked = args[0] == "check-action" and result.stdout.lstrip().lstrip("{").lstrip().startswith(
            ('"decision": "block"', "block")
        )
        assert result.exit_code == (3 if blocked else 0), (result.output, result.exception)
        return json.loads(result.stdout) if "--json" in args else result.stdout

    added = run("censors", "add", DROP, "--action", "block", "--reason", "never drop [prod] tables", "--json")
    assert isinstance(added, dict) and len(added["id"]) == 36 and added["action"] == "block"
    plain = run("censors", "add", "--action", "warn", "--no-dedup", "--", "-rf /")
    assert isinstance(plain, str) and re.fullmatch(r"added [0-9a-f-]{36}: warn `-rf /`\n", plain), plain

    checked = run("check-action", "DROP TABLE users", "--session", "s1", "--json")  # exit 3 on block
    assert isinstance(checked, dict) and checked["decision"] == "block"
    assert checked["matches"][0]["censor_id"] == added["id"] and checked["matches"][0]["how"] == "pattern"
    assert "never drop [prod] tables" in checked["reasons"][0]
    assert run("check-action", "water the plants", "--json") == {
        "decision": "allow",
        "overridden": False,
        "reasons": [],
        "warnings": [],
        "matches": [],
    }
    assert "block" in str(run("check-action", "drop table x"))

    listed = run("censors", "--json")
    assert isinstance(listed, list) and {c["id"] for c in listed} >= {added["id"]}
    row = next(c for c in listed if c["id"] == added["id"])
    assert row["activation_count"] == 2 and row["false_positive_count"] == 0
    table = run("censors")
    assert "DROP\\s+TABLE" in str(table) and "never drop [prod] tables" in str(table)

    run("censors", "false-positive", added["id"][:8], "--note", "a doc")
    edited = run("censors", "edit", added["id"][:8], "--action", "absolute", "--json")
    assert isinstance(edited, dict) and edited["action"] == "absolute" and edited["false_positive_count"] == 1
    overridden = run("check-action", "DROP TABLE users", "--override", "--json")
    assert isinstance(overridden, dict) and overridden["decision"] == "block" and not overridden["overridden"]
    run("censors", "retire", added["id"][:8], "--reason", "gone")
    assert run("check-action", "DROP TABLE users", "--json")["decision"] == "allow"
    assert added["id"] not in {c["id"] for c in run("censors", "--json")}


def test_cli_edit_and_retire_say_what_happened_and_check_action_exits_3_on_block(
    cli: CliRunner, database_url: str
) -> None:
    def run(*args: str, code: int = 0) -> str:
        result = cli.invoke(app, ["--db", database_url, *args])
        assert result.exit_code == code, (args, result.output)
        return result.stdout

    added = run("censors", "add", r"rm\s+-rf\s+/", "--reason", "destroys the host")
    assert re.fullmatch(r"added [0-9a-f-]{36}: warn `rm\\s\+-rf\\s\+/` — destroys the host\n", added), added
    censor = added.split()[1].rstrip(":")
    assert "warn" in run("check-action", "rm -rf /") and run("check-action", "rm -rf /")
    line = run("censors", "edit", censor[:8], "--action", "block")
    assert line.strip() == f"edited {censor[:8]}: action warn → block (activations kept: 2)"
    assert json.loads(run("check-action", "rm -rf /", "--json", code=3))["decision"] == "block"
    assert run("check-action", "rm -rf /", code=3).startswith("block")
    assert run("check-action", "rm -rf ./build").startswith("allow")
    line = run("censors", "edit", censor[:8], "--threshold", "9", "--reset-count")
    assert line.strip() == f"edited {censor[:8]}: threshold 3 → 9 (activations reset: 4 → 0)"
    retired = " ".join(run("censors", "retire", censor[:8]).split())
    assert retired.startswith(f"retired {censor[:8]}: `rm\\s+-rf\\s+/` no longer fires (it was block")
    assert "→" not in retired
    assert run("check-action", "rm -rf /").startswith("allow")


def test_cli_censor_errors_are_one_line(cli: CliRunner, database_url: str) -> None:
    for args, needle in (
        (["censors", "add", "(a+)+", "--action", "block"], "nests a quantifier"),
        (["censors", "add", "[", "--json"], "not a valid regular expression"),
        (["censors", "add", "x", "--action", "never"], "action must be one of"),
        (["censors", "retire", "00000000-0000-4000-8000-000000000000"], "no censor"),
        (["check-action", "   "], "action_text is empty"),
    ):
        result = cli.invoke(app, ["--db", database_url, *args])
        assert result.exit_code == 2, (args, result.output)
        assert needle in result.stderr and result.stderr.strip().count("\n") == 0 and result.stdout == ""


def test_cli_help_teaches(cli: CliRunner) -> None:
    for args in (
        ["censors"],
        ["censors", "add"],
        ["censors", "edit"],
        ["censors", "retire"],
        ["censors", "false-positive"],
        ["check-action"],
    ):
        result = cli.invoke(app, [*args, "--help"])
        assert result.exit_code == 0 and "Example:" in result.stdout, args
    for args in (["censors"], ["censors", "add"], ["censors", "edit"]):
        text = " ".join(cli.invoke(app, [*args, "--help"]).stdout.split())
        assert all(action in text for action in ("warn (", "block (", "absolute (")), args
    assert "3 on block" in " ".join(cli.invoke(app, ["check-action", "--help"]).stdout.split())
