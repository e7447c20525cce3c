"""Commands that store, find and inspect memories."""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

# typer (0.29+) carries its own copy of click: its usage error is this one.
from typer._click import exceptions as click_errors

from nous.cli.output import console, day, err_console, plural, print_json, readable, short, table, when
from nous.cli.runtime import fail, read_text_arg, with_nous
from nous.errors import GuardrailError
from nous.models import (
    Decision,
    Episode,
    ErasureReceipt,
    Fact,
    HistoryAction,
    HistoryEntry,
    LifecycleState,
    Memory,
    RecallHit,
    WriteResult,
)

if TYPE_CHECKING:
    from nous.api import Nous
    from nous.memory.dedup import SimilarityCheck

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of a table.")]
LimitOpt = Annotated[int, typer.Option("--limit", "-k", min=1, max=1000, help="How many to show.")]
FACTS_FULL_WIDTH = 100  # narrower terminals leave out the conf and seen columns of `nous facts`
MetaOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--meta",
        "-m",
        metavar="KEY=VALUE",
        help="A metadata entry; repeat for more. VALUE is read as JSON when it parses (3, true, "
        '["a"]), else as text.',
    ),
]
MetaFilterOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--meta",
        "-m",
        metavar="KEY=VALUE",
        help="Only memories whose metadata has KEY equal to VALUE (JSON when it parses, else text); "
        "repeat for more.",
    ),
]


def meta_pairs(pairs: list[str] | None) -> dict[str, Any] | None:
    """``--meta key=value`` options as a dict: each value JSON when it parses, else the text."""
    if not pairs:
        return None
    found: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(
                f"{pair!r} is not KEY=VALUE, e.g. --meta project=apollo", param_hint="--meta"
            )
        try:
            found[key.strip()] = json.loads(text)
        except ValueError:
            found[key.strip()] = text
    return found


def register(app: typer.Typer) -> None:
    """Attach this module's commands to the root app."""
    for command in (learn, recall, decide, facts, decisions, episodes, show, history, forget):
        app.command()(command)
    app.command("check-similar")(check_similar)


def check_similar(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(help="The content you are about to store, or - for stdin.")],
    kind: Annotated[
        str, typer.Option(help="fact, procedure, censor, …: compared within this kind.")
    ] = "fact",
    subject: Annotated[
        str | None, typer.Option(help="Subject, to recognise updates of the same fact.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """What storing TEXT would find, without storing it: duplicate_found, similar_found or unique.

    Each match shows its similarity and tier: duplicate (nothing would be stored), update (it would
    supersede the match), contradiction (both kept, flagged) or connect (linked).

    Example: nous check-similar "Never trade on low-volume weekends" --json
    """
    content = read_text_arg(text)

    async def act(nous: Nous) -> SimilarityCheck:
        return await nous.check_similar(content, kind, subject=subject)

    check = with_nous(ctx, act)
    if as_json:
        print_json(check.model_dump(mode="json"))
        return
    console.print(f"[bold]{check.recommendation.value}[/bold]")
    table(
        None,
        ["id", "similarity", "tier", "content", "why different"],
        [
            [
                m.id[:8],
                f"{m.similarity:.3f}",
                m.tier.value
                if m.lifecycle == LifecycleState.ACTIVE
                else f"{m.tier.value} ({m.lifecycle.value})",
                short(m.content),
                m.conflict.replace("_", " ") if m.conflict else None,
            ]
            for m in check.matches
        ],
        wrap=True,  # a handful of matches, read to decide: each shown whole
    )


def learn(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(help="The fact to remember, or - to read stdin.")],
    subject: Annotated[str | None, typer.Option(help="Who or what the fact is about.")] = None,
    category: Annotated[
        str | None,
        typer.Option(help="preference, technical, person, tool, concept, rule, event, lesson, other."),
    ] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", "-t", help="A tag; repeat for more.")] = None,
    confidence: Annotated[float, typer.Option(help="How sure, 0 to 1.")] = 1.0,
    supersedes: Annotated[
        str | None, typer.Option(help="Id (or 6+ char prefix) of a fact this one replaces.")
    ] = None,
    dedup: Annotated[
        bool, typer.Option("--dedup/--no-dedup", help="Check for duplicates before storing.")
    ] = True,
    user: Annotated[
        str | None,
        typer.Option("--user", help="The user it belongs to (default: the agent's shared memory)."),
    ] = None,
    meta: MetaOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Remember a fact, checking first for what is already known.

    The status says what happened: created (new), duplicate (already known: nothing stored,
    the existing fact is reinforced), connected (stored and linked to similar facts) or
    superseded (stored as the update of an older fact, which is kept in history).

    Example: nous learn "Alice prefers morning meetings" --subject Alice --category preference
    --meta project=apollo --meta priority=2
    """
    content = read_text_arg(text)
    metadata = meta_pairs(meta)

    async def act(nous: Nous) -> WriteResult:
        return await nous.learn(
            content,
            subject=subject,
            category=category,
            tags=tag or [],
            confidence=confidence,
            supersedes=supersedes,
            dedup=dedup,
            user_id=user,
            metadata=metadata,
            actor="cli",
        )

    result = with_nous(ctx, act)
    if as_json:
        payload: dict[str, object] = {
            "id": result.id,
            "status": result.status.value,
            "content": result.memory.content,
        }
        if result.existing_id:
            payload["existing_id"] = result.existing_id
            payload["lifecycle"] = result.memory.lifecycle.value
        if result.related_ids:
            payload["related_ids"] = result.related_ids
        if result.superseded_id:
            payload["superseded_id"] = result.superseded_id
        if result.similarity is not None:
            payload["similarity"] = result.similarity
        if result.warnings:
            payload["warnings"] = result.warnings
        print_json(payload)
        return
    console.print(f"[green]{result.status.value}[/green] {result.id}  {short(result.memory.content)}")
    if result.existing_id:
        console.print(f"  already known (similarity {result.similarity:.2f}); nothing new stored")
    if result.superseded_id:
        console.print(f"  replaces {result.superseded_id}; see `nous history {result.superseded_id[:8]}`")
    if result.related_ids:
        console.print(f"  linked to {', '.join(i[:8] for i in result.related_ids)}")
    for warning in result.warnings:
        console.print(f"  [yellow]warning[/yellow] {warning}")


def recall(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to look for, in plain words.")],
    limit: LimitOpt = 10,
    kind: Annotated[
        list[str] | None,
        typer.Option("--kind", help="fact, episode, decision, procedure, censor, turn; repeatable."),
    ] = None,
    since: Annotated[
        datetime | None, typer.Option(help="Only memories from this time on (ISO-8601).")
    ] = None,
    until: Annotated[datetime | None, typer.Option(help="Only memories before this time (ISO-8601).")] = None,
    session: Annotated[str | None, typer.Option(help="Only this session's memories.")] = None,
    frame: Annotated[
        str | None, typer.Option(help="Current frame (task, debug, ...): boosts memories from it.")
    ] = None,
    preset: Annotated[
        str | None,
        typer.Option(help="Retrieval recipe: default, dense-only, keyword-only or no-boosts."),
    ] = None,
    min_score: Annotated[
        float | None,
        typer.Option(
            "--min-score",
            min=0.0,
            max=1.0,
            help="Leave out results below this relevance (0-1; default NOUS_RECALL_MIN_SCORE).",
        ),
    ] = None,
    meta: MetaFilterOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Find the memories most relevant to a query (dense + keyword fusion, then a re-ranker).

    Each result's score is its estimated relevance, 0 to 1, comparable across queries: about 0.5
    is a likely answer, under 0.03 is noise (left out by default). Time words in the query narrow
    the search: "what did we decide last week?", "in May 2023", "before the trip". Recap questions
    ("what did we talk about?") list the latest episodes first.

    Example: nous recall "what does Alice prefer?" --limit 5 --json --meta project=apollo
    """
    where = meta_pairs(meta)

    async def act(nous: Nous) -> list[RecallHit]:
        return await nous.recall(
            query,
            limit=limit,
            kinds=kind,
            since=since,
            until=until,
            session_id=session,
            frame=frame,
            preset=preset,
            min_score=min_score,
            where=where,
        )

    hits = with_nous(ctx, act)
    if as_json:
        print_json(
            [
                {
                    "id": h.id,
                    "type": h.kind.value,
                    "content": h.content,
                    "score": h.score,
                    "signals": h.signals,
                    "occurred_at": h.occurred_at.isoformat(),
                    "current": h.current,
                }
                for h in hits
            ]
        )
        return
    if not hits:
        err_console.print("nothing relevant found (lower --min-score to see weaker matches)")
        return
    table(
        f"recall: {short(query, 60)}",
        ["#", "score", "type", "date", "content", "id"],
        [
            (
                i + 1,
                f"{h.score:.2f}",
                h.kind.value,
                f"{h.occurred_at:%Y-%m-%d}",
                short(h.content, 80) + ("" if h.current else " (replaced)"),
                h.id[:8],
            )
            for i, h in enumerate(hits)
        ],
    )


def decide(
    ctx: typer.Context,
    description: Annotated[str, typer.Argument(help="What was decided.")],
    confidence: Annotated[float, typer.Option(help="How sure, 0 to 1.")] = 0.5,
    category: Annotated[
        str | None, typer.Option(help="architecture, process, tooling, security, integration, other.")
    ] = None,
    stakes: Annotated[str, typer.Option(help="low, medium, high, critical.")] = "medium",
    context: Annotated[str | None, typer.Option(help="The situation it was decided in.")] = None,
    reason: Annotated[
        list[str] | None,
        typer.Option("--reason", "-r", help="TYPE:TEXT, e.g. analysis:'ACID needed'; repeatable."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Record a decision with its typed reasons.

    Example: nous decide "Use Postgres for the ledger" --confidence 0.8 -r analysis:"needs ACID"
    """
    reasons = []
    for raw in reason or []:
        kind, sep, text = raw.partition(":")
        if not sep or not text.strip():
            raise fail(f"--reason must look like TYPE:TEXT, got {raw!r}", 2)
        reasons.append({"type": kind.strip().lower(), "text": text.strip()})

    async def act(nous: Nous) -> Decision:
        try:
            return await nous.record_decision(
                description,
                confidence=confidence,
                category=category,
                stakes=stakes,
                context=context,
                reasons=reasons,
                actor="cli",
            )
        except GuardrailError as exc:
            raise GuardrailError(_refusal_in_cli_terms(exc)) from None

    decision = with_nous(ctx, act)
    if as_json:
        print_json({"id": decision.id, "status": "created", "decision": decision})
    else:
        console.print(f"[green]recorded[/green] {decision.id}  {short(decision.content)}")


def _refusal_in_cli_terms(exc: GuardrailError) -> str:
    """A guardrail's refusal, saying which options of `nous decide` would satisfy it."""
    wants = []
    if exc.needs_reasons:
        wants.append("add --reason TYPE:TEXT, e.g. --reason analysis:'because ...' (repeatable)")
    if exc.min_confidence is not None:
        wants.append(f"raise --confidence to at least {exc.min_confidence:g}")
    if not wants:
        return str(exc)
    rule = f" by guardrail {exc.guardrail!r}" if exc.guardrail else ""
    return f"decision refused{rule}: {exc.problem}: {' and '.join(wants)}"


def _more_note(more: bool, limit: int, noun: str) -> None:
    """Says that a listing stopped at its limit, and how to see the rest."""
    if more:
        console.print(f"[dim]the newest {limit} {noun} shown; there are more: --limit N (up to 1000)[/dim]")


def _list(ctx: typer.Context, kind: str, limit: int, where: dict[str, Any] | None = None) -> list[Memory]:
    async def act(nous: Nous) -> list[Memory]:
        return await nous.memories(kind, limit=limit, where=where)

    return with_nous(ctx, act)


def facts(
    ctx: typer.Context,
    limit: LimitOpt = 50,
    user: Annotated[
        str | None,
        typer.Option(
            "--user", help="As this user sees them: theirs and the agent's shared ones (default: all)."
        ),
    ] = None,
    subject: Annotated[str | None, typer.Option("--subject", help="Only this subject (exact).")] = None,
    category: Annotated[str | None, typer.Option("--category", help="Only this category (exact).")] = None,
    meta: MetaFilterOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List facts, newest first.

    The content gets the width: subject and category are cut first, and on a terminal narrower
    than 100 columns the conf and seen columns are left out. Long contents end in an ellipsis to
    keep one fact per line; --json prints them whole, every field included.

    Example: nous facts --subject Alice --limit 20 --meta project=apollo
    """

    async def act(nous: Nous) -> list[Memory]:
        return await nous.memories(
            "fact",
            limit=limit + 1,  # one more: whether there are more than shown
            user_id=user,
            subject=subject,
            category=category,
            where=meta_pairs(meta),
        )

    found = [f for f in with_nous(ctx, act) if isinstance(f, Fact)]
    more, found = len(found) > limit, found[:limit]
    if as_json:
        print_json(found)
        return
    narrow = console.width < FACTS_FULL_WIDTH
    columns = ["id", "content", "subject", "category", *([] if narrow else ["conf", "seen"]), "learned"]
    table(
        "facts",
        columns,
        [
            (
                f.id[:8],
                short(f.content, 70),
                f.subject,
                f.category,
                *([] if narrow else [f"{f.confidence:.2f}", f.confirmation_count + 1]),
                day(f.created_at),
            )
            for f in found
        ],
        main="content",
        side=["subject", "category"],
    )
    _more_note(more, limit, "facts")


def decisions(ctx: typer.Context, limit: LimitOpt = 50, as_json: JsonOpt = False) -> None:
    """List decisions, newest first.

    Example: nous decisions --json
    """
    found = [d for d in _list(ctx, "decision", limit + 1) if isinstance(d, Decision)]
    more, found = len(found) > limit, found[:limit]
    if as_json:
        print_json(found)
        return
    table(
        "decisions",
        ["id", "description", "conf", "stakes", "outcome", "reasons", "when"],
        [
            (
                d.id[:8],
                short(d.content, 60),
                f"{d.confidence:.2f}",
                d.stakes.value,
                d.outcome.value,
                len(d.reasons),
                day(d.created_at),
            )
            for d in found
        ],
        main="description",
        side=("stakes", "outcome"),
    )
    _more_note(more, limit, "decisions")


def episodes(ctx: typer.Context, limit: LimitOpt = 50, as_json: JsonOpt = False) -> None:
    """List episodes, most recent first (closed ones included).

    Example: nous episodes --limit 10
    """
    found = [e for e in _list(ctx, "episode", limit + 1) if isinstance(e, Episode)]
    more, found = len(found) > limit, found[:limit]
    if as_json:
        print_json(found)
        return
    table(
        "episodes",
        ["id", "title", "outcome", "started", "ended", "summary"],
        [
            (
                e.id[:8],
                short(e.title or e.content, 40),
                e.outcome.value,
                day(e.started_at),
                day(e.ended_at),
                short(e.summary, 50),
            )
            for e in found
        ],
    )
    _more_note(more, limit, "episodes")


def show(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(help="Id or 6+ char prefix.")],
    as_json: JsonOpt = False,
) -> None:
    """Show one memory in full: every field, long texts wrapped rather than cut.

    Numbers are rounded for reading (stability 36.0 days, not 36.00001064906704); --json has
    them exact.

    Example: nous show 3f2a9c1b --json
    """
    memory = with_nous(ctx, lambda nous: nous.get(memory_id))
    if as_json:
        print_json({"kind": memory.kind.value, **memory.model_dump(mode="json")})
        return
    fields = {"kind": memory.kind.value, **memory.model_dump()}
    table(
        f"{memory.kind.value} {memory.id}",
        ["field", "value"],
        [
            (k, escape(readable(getattr(v, "value", v))))
            for k, v in fields.items()
            if v not in (None, [], {}, "")
        ],
        wrap=True,
    )


def history(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(help="Id or 6+ char prefix.")],
    as_json: JsonOpt = False,
) -> None:
    """Show every recorded change to a memory: what, from, to, who, when.

    The history outlives the memory: after `nous forget ID --hard` the id, or a 6+ character
    prefix of it, still shows what happened to it, the purge included.

    Example: nous history 3f2a9c1b
    """
    entries: list[HistoryEntry] = with_nous(ctx, lambda nous: nous.history(memory_id))
    if as_json:
        print_json(entries)
        return

    def fmt(value: dict | None, action: HistoryAction) -> str:
        if not value:
            return ""
        if action == HistoryAction.CREATE:  # the whole memory: what it said is what a reader needs
            value = {k: value[k] for k in _CREATED_SHOWN if value.get(k)} or value
        # a stable order (PostgreSQL's jsonb keeps keys by length): what it says first, then A-Z
        keys = sorted(value, key=lambda k: (_CREATED_SHOWN.index(k) if k in _CREATED_SHOWN else 9, k))
        shown = [f"{k}={_history_value(value[k])}" for k in keys if value[k] not in (None, "", [], {})]
        return escape(short(", ".join(shown), 100))

    table(
        f"history of {entries[0].memory_id} · {plural(len(entries), 'change')}",
        ["when", "action", "actor", "old", "new"],
        [
            (when(e.at), e.action.value, e.actor, fmt(e.old_value, e.action), fmt(e.new_value, e.action))
            for e in entries
        ],
        wrap=True,  # a change is read whole: what it was, what it became
    )


_CREATED_SHOWN = ("content", "subject", "category", "name")
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def _history_value(value: object) -> str:
    """A recorded value as a reader scans it: an id by its first 8 characters, a time to the minute."""
    if isinstance(value, str):
        if _UUID.match(value):
            return value[:8]
        try:
            return when(datetime.fromisoformat(value)) if "T" in value else value
        except ValueError:
            return value
    return readable(value)


def _one_target(ctx: typer.Context, param: typer.CallbackParam, value: str | None) -> str | None:
    """A memory id or --user, exactly one: checked while parsing, by whichever comes second."""
    other = "user" if param.name == "memory_id" else "memory_id"
    if other in ctx.params:
        given = [v for v in (value, ctx.params[other]) if v is not None]
        if len(given) != 1:
            raise click_errors.UsageError(
                "give a memory id or --user ID, not both" if given else "missing a memory id (or --user ID)",
                ctx,
            )
    return value


def forget(
    ctx: typer.Context,
    memory_id: Annotated[
        str | None, typer.Argument(help="Id or 6+ char prefix.", callback=_one_target, show_default=False)
    ] = None,
    hard: Annotated[bool, typer.Option("--hard", help="Delete the row for good (still audited).")] = False,
    user: Annotated[
        str | None,
        typer.Option(
            "--user", help="Erase this user instead: everything of theirs, for good.", callback=_one_target
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Forget a memory: hidden from recall but restorable, or purged with --hard.

    Either way the change is audited: `nous history ID` shows it.

    With --user ID, erase one of the agent's users for good: every memory of theirs (all kinds),
    their sessions, working memory, events, links and audit rows, in one transaction. The agent's
    shared memories stay. It prints the receipt (rows removed per table), which the agent's audit
    keeps: `nous history user:ID`.

    Example: nous forget 3f2a9c1b --hard

    Example: nous forget --user alice --json
    """
    if user is not None:
        receipt: ErasureReceipt = with_nous(ctx, lambda nous: nous.forget_user(user, actor="cli"))
        if as_json:
            print_json(receipt.model_dump(mode="json"))
            return
        kinds = ", ".join(f"{n} {k}" for k, n in receipt.memories_by_kind.items())
        console.print(
            f"[yellow]erased[/yellow] user {escape(receipt.user_id)}: "
            f"{plural(receipt.memories, 'memory', 'memories')}{f' ({kinds})' if kinds else ''}, "
            f"{plural(receipt.sessions, 'session')}, {plural(receipt.events, 'event')}, "
            f"{plural(receipt.edges, 'link')}, {plural(receipt.history, 'audit row')}"
        )
        return
    assert memory_id is not None  # _one_target saw to it
    memory = with_nous(ctx, lambda nous: nous.forget(memory_id, hard=hard, actor="cli"))
    status = "purged" if hard else "forgotten"
    if as_json:
        print_json({"id": memory.id, "status": status})
    else:
        console.print(f"[yellow]{status}[/yellow] {memory.id}  {short(memory.content)}")
