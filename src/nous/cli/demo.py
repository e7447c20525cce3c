"""``nous demo``: store a sample conversation and answer questions from memory."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from nous.cli.output import console, joined, number, plural, print_json, short, table
from nous.cli.runtime import run, state
from nous.models import Edge, EdgeRelation, Provenance, Turn

if TYPE_CHECKING:
    from nous.api import Nous


def load_sample() -> dict[str, Any]:
    """The sample conversation shipped with the package."""
    return json.loads(resources.files("nous.data").joinpath("sample_conversation.json").read_text("utf-8"))


async def store_sample(nous: Nous, sample: dict[str, Any]) -> dict[str, int]:
    """Store the sample as an episode with its turns, facts and decision."""
    started = datetime.fromisoformat(sample["started_at"])
    episode = await nous.start_episode(
        sample["title"],
        started_at=started,
        session_id="demo-session",
        participants=sample["participants"],
        actor="demo",
    )
    turns = [
        Turn(
            agent_id=nous.agent_id,
            content=m["content"],
            role=m["role"],
            speaker=m.get("name") or m["role"],
            session_id="demo-session",
            episode_id=episode.id,
            occurred_at=started + timedelta(minutes=i),
            provenance=Provenance(
                source="demo", session_id="demo-session", episode_id=episode.id, turn_ids=[f"demo:{i}"]
            ),
        )
        for i, m in enumerate(sample["messages"])
    ]
    links = [
        Edge(source_id=t.id, target_id=episode.id, relation=EdgeRelation.PART_OF, agent_id=nous.agent_id)
        for t in turns
    ]
    await nous.add_many(turns, edges=links, actor="demo")
    for fact in sample["facts"]:
        await nous.learn(
            fact["content"],
            subject=fact["subject"],
            category=fact["category"],
            occurred_at=started,
            session_id="demo-session",
            source="demo",
            actor="demo",
        )
    await nous.record_decision(**sample["decision"], episode_id=episode.id, occurred_at=started, actor="demo")
    await nous.end_episode(
        episode.id,
        summary="Planned the Lisbon offsite and the ledger migration.",
        ended_at=started + timedelta(minutes=len(turns)),
        actor="demo",
    )
    return {"turns": len(turns), "facts": len(sample["facts"]), "decisions": 1, "episodes": 1}


def demo(
    ctx: typer.Context,
    top: Annotated[int, typer.Option(min=1, max=10, help="Answers shown per question.")] = 3,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
) -> None:
    """Store a sample conversation in a fresh demo store, then answer questions from memory.

    The demo store is NOUS_HOME/demo.db (recreated on each run) unless --db is given.

    Example: nous demo --top 2
    """
    from nous.api import Nous

    st = state(ctx)
    settings = st.settings
    if not settings.database_url:
        path = Path(settings.home) / "demo.db"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        settings = settings.model_copy(update={"database_url": f"sqlite:///{path}"})
    sample = load_sample()

    async def go() -> tuple[dict[str, int], list[dict[str, Any]], str]:
        async with Nous(settings, agent_id=st.agent_id) as nous:
            counts = await store_sample(nous, sample)
            answers = []
            for question in sample["questions"]:
                hits = await nous.recall(question, limit=top, kinds=["fact", "decision", "episode"])
                answers.append(
                    {
                        "question": question,
                        "answers": [
                            {"type": h.kind.value, "content": h.content, "score": h.score} for h in hits
                        ],
                    }
                )
            return counts, answers, nous.store.info.location

    counts, answers, location = run(go())
    if as_json:
        print_json({"store": location, "stored": counts, "answers": answers})
        return
    stored = joined(
        [
            plural(counts["turns"], "conversation turn"),
            plural(counts["facts"], "fact"),
            plural(counts["decisions"], "decision"),
            plural(counts["episodes"], "episode"),
        ]
    )
    console.print(f"[bold]Stored[/bold] {stored} in {location}", highlight=False)
    console.print(f"Then asked {plural(len(answers), 'question')}; the best answers from memory:\n")
    for item in answers:
        table(
            f"Q: {item['question']}",
            ["#", "type", "memory", "relevance"],
            [
                (i + 1, a["type"], short(a["content"], 90), number(a["score"]))
                for i, a in enumerate(item["answers"])
            ],
        )
    console.print('\nTry it yourself: [bold]nous learn "..."[/bold] then [bold]nous recall "..."[/bold]')
