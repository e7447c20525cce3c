"""The turn loop and the agent's self from the command line: ``nous context``, ``reply``,
``end-session``, ``sessions``, ``working-memory``, ``identity``, ``procedures``, ``calibration``
and ``review``.

A session lives in the store, so each command is one step of it: ``nous context "..." --session S``
before the agent answers, ``nous reply --session S "..."`` after, ``nous end-session S`` at the end,
each in a separate process if need be.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from nous._text import validate_content
from nous.cli.output import console, plural, print_json, short, table, when
from nous.cli.runtime import fail, read_text_arg, with_nous
from nous.cognitive.frames import FRAMES
from nous.models import (
    Calibration,
    CategoryCalibration,
    Decision,
    HistoryEntry,
    Procedure,
    SessionState,
    WorkingMemory,
    WriteResult,
)
from nous.models.session import SECTION_BUDGETS, IdentitySection

if TYPE_CHECKING:
    from nous.api import Nous
    from nous.cognitive import ContextSection, SessionEnd, TurnContext

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of a table.")]
SessionOpt = Annotated[
    str, typer.Option("--session", "-s", help="Session id; a new id starts a new session.")
]
SECTIONS = ", ".join(SECTION_BUDGETS)

identity_app = typer.Typer(
    name="identity", no_args_is_help=False, context_settings={"help_option_names": ["-h", "--help"]}
)
procedures_app = typer.Typer(
    name="procedures", no_args_is_help=False, context_settings={"help_option_names": ["-h", "--help"]}
)


def register(app: typer.Typer) -> None:
    """Attach this module's commands to the root app."""
    app.command()(context)
    app.command()(reply)
    app.command("end-session")(end_session)
    app.command()(sessions)
    app.command("working-memory")(working_memory)
    app.add_typer(identity_app, name="identity")
    app.add_typer(procedures_app, name="procedures")
    app.command()(calibration)
    app.command()(review)


# -- the turn loop ---------------------------------------------------------------------------------


def _section_json(s: ContextSection) -> dict[str, Any]:
    return {
        "name": s.name,
        "title": s.title,
        "tokens": s.tokens,
        "budget": s.budget,
        "items": [
            {"id": i.id, "kind": i.kind, "tokens": i.tokens, "score": i.score, "text": i.text}
            for i in s.items
        ],
        "dropped": [{"id": d.id, "reason": d.reason.value} for d in s.dropped],
    }


def _dropped(s: ContextSection) -> str:
    counts = Counter(d.reason.value for d in s.dropped)
    return ", ".join(f"{n} {reason}" for reason, n in counts.items())


def context(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(help="The user's message, or - to read stdin.")],
    session: SessionOpt,
    user: Annotated[str | None, typer.Option("--user", "-u", help="User id (kept for the session).")] = None,
    frame: Annotated[
        str | None, typer.Option("--frame", "-f", help=f"Force a frame: {', '.join(FRAMES)}.")
    ] = None,
    budget: Annotated[
        int | None,
        typer.Option(
            "--budget",
            "-b",
            min=0,
            help="Total token budget, shared by the sections that have something to show (default: the frame's, each section within its ceiling).",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Before the agent answers: record the user's message and print the context to give it.

    Runs pre_turn: chooses the frame from the text (unless --frame), records the message in the
    session (a new --session id starts one), opens the session's episode when it has earned one,
    and assembles identity, user profile, censors, working memory, recent conversations and
    recalled memories within the frame's token budget. Prints the context, then what each section
    holds and what it left out, and why. Follow with `nous reply --session S "..."`.

    Example: nous context "Why did we pick Postgres for the ledger?" --session s1 --user alice --json
    """
    user_text = read_text_arg(text)

    async def act(nous: Nous) -> TurnContext:
        return await nous.pre_turn(session, user_text, user_id=user, frame=frame, budget=budget, actor="cli")

    turn = with_nous(ctx, act)
    if as_json:
        print_json(
            {
                "session_id": turn.session_id,
                "turn": turn.turn,
                "frame": turn.frame,
                "frame_confidence": turn.frame_confidence,
                "greeting": turn.greeting,
                "recap": turn.recap,
                "query": turn.query,
                "context": turn.text,
                "tokens": turn.tokens,
                "budget": turn.budget,
                "episode_action": turn.episode_action,
                "episode_id": turn.episode_id,
                "duplicate_of": turn.duplicate_of,
                "sections": [_section_json(s) for s in turn.sections],
            }
        )
        return
    console.print(turn.text or "(empty context)", markup=False, highlight=False, soft_wrap=True)
    console.print()
    table(
        "sections",
        ["section", "tokens", "budget", "items", "dropped"],
        [(s.name, s.tokens, s.budget, len(s.items), _dropped(s)) for s in turn.sections],
    )
    episode = turn.episode_action + (f" {turn.episode_id}" if turn.episode_id else "")
    if turn.duplicate_of:
        episode += f" (repeats {turn.duplicate_of})"
    console.print(
        f"session {escape(turn.session_id)} · turn {turn.turn} · frame [bold]{turn.frame}[/bold] "
        f"({turn.frame_confidence:.2f}) · {turn.tokens}/{turn.budget} tokens · episode {episode}",
        highlight=False,
    )


def _session_json(state: SessionState) -> dict[str, Any]:
    return {
        **state.model_dump(mode="json"),
        "total_chars": state.total_chars,
        "ended": state.ended,
    }


def _show_session(state: SessionState) -> None:
    table(
        f"session {state.session_id}",
        ["field", "value"],
        [
            ("user", state.user_id),
            ("frame", state.frame),
            ("turns", state.turn_count),
            ("tools", ", ".join(state.tools_used)),
            ("characters", f"{state.total_chars} (user {state.user_chars}, agent {state.assistant_chars})"),
            ("episode", state.episode_id),
            ("started", when(state.started_at)),
            ("last active", when(state.last_active_at)),
            ("ended", when(state.ended_at)),
        ],
    )


def reply(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(help="The agent's reply, or - to read stdin.")],
    session: SessionOpt,
    tool: Annotated[
        list[str] | None, typer.Option("--tool", "-t", help="A tool used in the turn; repeat for more.")
    ] = None,
    decision: Annotated[
        list[str] | None, typer.Option("--decision", help="Id of a decision made in the turn; repeatable.")
    ] = None,
    fact: Annotated[
        list[str] | None, typer.Option("--fact", help="Id of a fact learned in the turn; repeatable.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """After the agent answered: record its reply and print the session's state.

    Runs post_turn: counts the turn, the tools and the characters, stores the user message and the
    reply as two turns of the session's episode, and links the decisions and facts written during
    the turn to it. The session must have had a `nous context` first.

    Example: nous reply --session s1 "We picked Postgres for ACID guarantees." --tool recall
    """
    from nous.cognitive import TurnResult

    reply_text = read_text_arg(text)
    result = TurnResult(
        reply=reply_text, tools_used=tool or [], decision_ids=decision or [], fact_ids=fact or []
    )

    async def act(nous: Nous) -> SessionState:
        validate_content(reply_text, field="reply", max_bytes=nous.settings.max_content_bytes)
        return await nous.cognitive.post_turn(session, result, actor="cli")

    state = with_nous(ctx, act)
    if as_json:
        print_json(_session_json(state))
        return
    _show_session(state)


def end_session(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="The session to end.")],
    reflection: Annotated[
        str | None,
        typer.Option("--reflection", "-r", help="What was learned; each line becomes a lesson fact."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """End a session: close its episode and learn the reflection's lessons.

    The episode is closed, or discarded (soft-deleted, restorable) if the session stayed trivial:
    one turn at most, no tools, under 200 characters. Each line of --reflection (8+ characters)
    is learned as a lesson fact through the duplicate check. Ending an ended session changes
    nothing; an unknown session is an error.

    Example: nous end-session s1 --reflection "Check the ledger's ACID needs before picking a store"
    """

    async def act(nous: Nous) -> SessionEnd:
        return await nous.cognitive.end_session(session, reflection=reflection, actor="cli")

    done = with_nous(ctx, act)
    episode = done.episode
    if not done.ended_now:
        action = "already_ended"
    elif episode is None:
        action = "none"
    else:
        action = "closed" if episode.active else "discarded"
    facts = [{"id": f.id, "status": f.status.value, "content": f.memory.content} for f in done.facts]
    if as_json:
        print_json(
            {
                "session_id": done.session.session_id,
                "status": "ended",
                "episode_action": action,
                "episode_id": episode.id if episode else done.session.episode_id,
                "facts": facts,
                "session": _session_json(done.session),
            }
        )
        return
    console.print(
        f"[green]ended[/green] {escape(done.session.session_id)} after {plural(done.session.turn_count, 'turn')}",
        highlight=False,
    )
    if episode is not None:
        console.print(f"  episode {action}: {episode.id}  {escape(short(episode.title or episode.content))}")
    else:
        console.print(f"  episode: {action}")
    for f in facts:
        console.print(f"  lesson {f['status']} {f['id']}  {escape(short(f['content']))}")


def sessions(
    ctx: typer.Context,
    live: Annotated[bool, typer.Option("--live", help="Only sessions still going.")] = False,
    ended: Annotated[bool, typer.Option("--ended", help="Only ended sessions.")] = False,
    limit: Annotated[int, typer.Option("--limit", "-k", min=1, max=10_000, help="How many to show.")] = 50,
    as_json: JsonOpt = False,
) -> None:
    """List sessions by last activity, newest first.

    Example: nous sessions --live --json
    """
    if live and ended:
        raise fail("choose one of --live and --ended", 2)
    which = True if ended else (False if live else None)

    async def act(nous: Nous) -> list[SessionState]:
        return await nous.sessions(ended=which, limit=limit)

    found = with_nous(ctx, act)
    if as_json:
        print_json([_session_json(s) for s in found])
        return
    # the table keeps what tells sessions apart; tools, characters and exact times are in --json
    # and in `nous reply`'s view of one session
    table(
        f"sessions · {plural(len(found), 'session')}",
        ["id", "user", "frame", "turns", "episode", "last active", "state"],
        [
            (
                escape(s.session_id),
                escape(s.user_id or ""),
                s.frame,
                s.turn_count,
                (s.episode_id or "")[:8],
                when(s.last_active_at),
                "ended" if s.ended else "live",
            )
            for s in found
        ],
    )


def working_memory(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="The session whose working memory to show or change.")],
    task: Annotated[str | None, typer.Option("--task", help="Set the current task.")] = None,
    focus: Annotated[str | None, typer.Option("--focus", help="Add an item to attend to.")] = None,
    relevance: Annotated[
        float, typer.Option("--relevance", min=0.0, max=1.0, help="How relevant the --focus item is, 0 to 1.")
    ] = 0.5,
    thread: Annotated[str | None, typer.Option("--thread", help="Add an open thread (a loose end).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Show a session's working memory: current task, focus items by relevance, open threads.

    With --task, --focus or --thread it changes them first (the context of the session's next
    turn includes them). Beyond 20 items the least relevant are dropped.

    Example: nous working-memory s1 --task "migrate the ledger" --focus "keep ACID" --relevance 0.9
    """

    async def act(nous: Nous) -> WorkingMemory:
        organ = nous.heart.working_memory
        max_bytes = nous.settings.max_content_bytes
        if task is not None:
            await organ.set_task(session, validate_content(task, field="task", max_bytes=max_bytes))
        if focus is not None:
            item = validate_content(focus, field="focus", max_bytes=max_bytes)
            await organ.focus(session, item, relevance=relevance)
        if thread is not None:
            await organ.open_thread(session, validate_content(thread, field="thread", max_bytes=max_bytes))
        return await organ.get(session)

    if not session.strip():
        raise fail("session id is empty", 2)
    wm = with_nous(ctx, act)
    items = sorted(wm.items, key=lambda i: i.relevance, reverse=True)
    if as_json:
        print_json(
            {
                "session_id": wm.session_id,
                "current_task": wm.current_task,
                "frame": wm.frame,
                "items": [i.model_dump(mode="json") for i in items],
                "open_threads": wm.open_threads,
                "updated_at": wm.updated_at.isoformat(),
            }
        )
        return
    console.print(f"current task: {wm.current_task or '(none)'}", markup=False, highlight=False)
    table(
        "focus",
        ["relevance", "kind", "content", "memory"],
        [
            (f"{i.relevance:.2f}", i.kind, escape(short(i.content, 90)), (i.memory_id or "")[:8])
            for i in items
        ],
    )
    table("open threads", ["thread"], [(escape(short(t, 100)),) for t in wm.open_threads])


# -- identity ----------------------------------------------------------------------------------------


def _check_section(section: str) -> str:
    name = section.strip().lower()
    if name not in SECTION_BUDGETS:
        raise fail(f"unknown identity section {section!r}; known: {SECTIONS}", 2)
    return name


def _identity_json(s: IdentitySection) -> dict[str, Any]:
    return {
        "section": s.section,
        "version": s.version,
        "updated_at": s.updated_at.isoformat(),
        "content": s.content,
    }


@identity_app.callback(invoke_without_command=True)
def identity(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """The agent's identity: who it is, in versioned sections. Without a subcommand, show them.

    Sections (each with its token budget, 500 in all): character 150, values 100, protocols 100,
    preferences 75, boundaries 75. They open every turn's context. Every change keeps the old
    text in the section's history.

    Example: nous identity set character "A careful engineer who explains trade-offs briefly."

    Example: nous identity --json
    """
    if ctx.invoked_subcommand is not None:
        return

    async def act(nous: Nous) -> list[IdentitySection]:
        return await nous.identity()

    found = with_nous(ctx, act)
    if as_json:
        print_json([_identity_json(s) for s in found])
        return
    if not found:
        console.print(f'[dim]identity: none set; try `nous identity set character "..."` ({SECTIONS})[/dim]')
        return
    table(
        "identity",
        ["section", "version", "updated", "content"],
        [(s.section, s.version, when(s.updated_at), escape(s.content)) for s in found],
    )


@identity_app.command("set")
def identity_set(
    ctx: typer.Context,
    section: Annotated[str, typer.Argument(help=f"One of {SECTIONS}.")],
    text: Annotated[str, typer.Argument(help="The section's new text, or - to read stdin.")],
    as_json: JsonOpt = False,
) -> None:
    """Replace one identity section; its version goes up and the old text stays in its history.

    A text over the section's token budget is refused (shorten it).

    Example: nous identity set boundaries "Never touch production data without a ticket."
    """
    name = _check_section(section)
    content = read_text_arg(text)

    async def act(nous: Nous) -> IdentitySection:
        return await nous.cognitive.identity.set(name, content, actor="cli")

    saved = with_nous(ctx, act)
    if as_json:
        print_json({"status": "set", **_identity_json(saved)})
        return
    console.print(f"[green]set[/green] {saved.section} (version {saved.version})")


@identity_app.command("history")
def identity_history(
    ctx: typer.Context,
    section: Annotated[str, typer.Argument(help=f"One of {SECTIONS}.")],
    as_json: JsonOpt = False,
) -> None:
    """Every change to one identity section: when, who, the old and the new text.

    Example: nous identity history character --json
    """
    name = _check_section(section)

    async def act(nous: Nous) -> list[HistoryEntry]:
        return await nous.cognitive.identity.history(name)

    entries = with_nous(ctx, act)
    if as_json:
        print_json(entries)
        return

    def text_of(value: dict[str, Any] | None) -> str:
        return escape(short(str((value or {}).get("content", "")), 70))

    table(
        f"history of identity {name}",
        ["when", "action", "actor", "old", "new"],
        [(when(e.at), e.action.value, e.actor, text_of(e.old_value), text_of(e.new_value)) for e in entries],
        wrap=True,
    )


# -- procedures ----------------------------------------------------------------------------------------


def _procedure_json(p: Procedure) -> dict[str, Any]:
    return {
        "id": p.id,
        "name": p.name,
        "description": p.content,
        "domain": p.domain,
        "goals": p.goals,
        "core_tools": p.core_tools,
        "activation_count": p.activation_count,
        "success_count": p.success_count,
        "failure_count": p.failure_count,
        "effectiveness": p.effectiveness,
        "created_at": p.created_at.isoformat(),
    }


@procedures_app.callback(invoke_without_command=True)
def procedures(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option("--limit", "-k", min=1, max=10_000, help="How many to show.")] = 50,
    as_json: JsonOpt = False,
) -> None:
    """Procedures: how to do things, and how well that has worked. Without a subcommand, list them.

    Each shows how often it was used and how often that succeeded or failed (record a use with
    `nous procedures use ID --success`).

    Example: nous procedures add "deploy" "Run the tests, tag the release, then push the tag"

    Example: nous procedures --json
    """
    if ctx.invoked_subcommand is not None:
        return

    async def act(nous: Nous) -> list[Procedure]:
        return await nous.heart.procedures.all(limit=limit)

    found = with_nous(ctx, act)
    if as_json:
        print_json([_procedure_json(p) for p in found])
        return
    table(
        "procedures",
        ["id", "name", "description", "domain", "uses", "ok/failed", "effective"],
        [
            (
                p.id[:8],
                escape(short(p.name, 30)),
                escape(short(p.content, 60)),
                p.domain,
                p.activation_count,
                f"{p.success_count}/{p.failure_count}",
                "" if p.effectiveness is None else f"{p.effectiveness:.0%}",
            )
            for p in found
        ],
    )


@procedures_app.command("add")
def procedures_add(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="A short name, e.g. deploy.")],
    description: Annotated[str, typer.Argument(help="How to do it, or - to read stdin.")],
    domain: Annotated[str | None, typer.Option(help="Area it belongs to, e.g. release, database.")] = None,
    goal: Annotated[list[str] | None, typer.Option("--goal", help="What it achieves; repeatable.")] = None,
    tool: Annotated[list[str] | None, typer.Option("--tool", help="A tool it uses; repeatable.")] = None,
    dedup: Annotated[
        bool, typer.Option("--dedup/--no-dedup", help="Skip it if an equivalent procedure exists.")
    ] = True,
    as_json: JsonOpt = False,
) -> None:
    """Add a procedure, checking first for an equivalent one (status as for `nous learn`).

    Example: nous procedures add "deploy" "Run the tests, tag the release, push the tag" --tool git
    """
    content = read_text_arg(description)

    async def act(nous: Nous) -> WriteResult:
        return await nous.add_procedure(
            name, content, domain=domain, goals=goal, core_tools=tool, dedup=dedup, actor="cli"
        )

    result = with_nous(ctx, act)
    if as_json:
        payload: dict[str, Any] = {"id": result.id, "status": result.status.value, "name": name}
        if result.existing_id:
            payload["existing_id"] = result.existing_id
        if result.related_ids:
            payload["related_ids"] = result.related_ids
        print_json(payload)
        return
    console.print(f"[green]{result.status.value}[/green] {result.id}  {escape(short(name))}")
    if result.existing_id:
        console.print(f"  already known as {result.existing_id}; nothing new stored")


@procedures_app.command("use")
def procedures_use(
    ctx: typer.Context,
    procedure_id: Annotated[str, typer.Argument(help="Procedure id or 6+ character prefix.")],
    success: Annotated[
        bool | None, typer.Option("--success/--failure", help="How the use turned out (omit if unknown).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Record a use of a procedure and, when known, whether it worked.

    Example: nous procedures use 3f2a9c1b --success
    """

    async def act(nous: Nous) -> Procedure:
        return await nous.heart.procedures.record_use(procedure_id, success=success, actor="cli")

    p = with_nous(ctx, act)
    if as_json:
        print_json({"status": "recorded", **_procedure_json(p)})
        return
    console.print(
        f"[green]recorded[/green] {p.id}  uses {p.activation_count}, "
        f"success {p.success_count}, failure {p.failure_count}"
    )


# -- decisions: calibration and review -----------------------------------------------------------------


def _figure(value: float | None, fmt: str = ".3f") -> str:
    return "" if value is None else format(value, fmt)


def calibration(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """How well the agent's confidence predicted outcomes, over reviewed decisions.

    Brier score: mean of (confidence - outcome)², outcome 1 for success, 0.5 partial, 0 failure;
    0 is perfect, 0.25 is always saying 0.5. Directional accuracy: share of successes and
    failures (partial ones left out) where a confidence of 0.5 or more went with success. Success
    rate counts partial as half. Review decisions with `nous review ID --outcome success`.

    Example: nous calibration --json
    """

    async def act(nous: Nous) -> Calibration:
        return await nous.calibration()

    cal = with_nous(ctx, act)
    if as_json:
        print_json(cal)
        return

    def row(c: CategoryCalibration) -> tuple[Any, ...]:
        return (
            c.category,
            c.resolved,
            _figure(c.brier_score),
            _figure(c.directional_accuracy, ".0%"),
            _figure(c.mean_confidence, ".2f"),
            _figure(c.success_rate, ".0%"),
        )

    table(
        "calibration",
        ["category", "reviewed", "brier", "directional", "mean confidence", "success rate"],
        [row(cal.overall), *(row(c) for c in cal.per_category)],
    )
    console.print(f"{plural(cal.pending, 'decision')} awaiting review")


def review(
    ctx: typer.Context,
    decision_id: Annotated[str, typer.Argument(help="Decision id or 6+ character prefix.")],
    outcome: Annotated[str, typer.Option("--outcome", "-o", help="success, partial or failure.")],
    note: Annotated[str | None, typer.Option("--note", "-n", help="What happened.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Record how a decision turned out; reviewed decisions feed `nous calibration`.

    Example: nous review 3f2a9c1b --outcome success --note "no data loss after the migration"
    """

    async def act(nous: Nous) -> Decision:
        return await nous.brain.decisions.review(decision_id, outcome, note=note, actor="cli")

    d = with_nous(ctx, act)
    if as_json:
        print_json(
            {
                "id": d.id,
                "status": "reviewed",
                "outcome": d.outcome.value,
                "outcome_note": d.outcome_note,
                "confidence": d.confidence,
                "content": d.content,
            }
        )
        return
    console.print(f"[green]reviewed[/green] {d.id}  {d.outcome.value}  {escape(short(d.content))}")
