"""Extraction quality: do the facts the pipeline extracts match what people annotated?

LoCoMo files carry per session and speaker human-annotated events (``events_session_N``:
"Caroline attends an LGBTQ support group for the first time.") and a summary
(``session_N_summary``). For each conversation: a fresh store, ingest with the offline provider,
the event pipeline run to completion, then per annotated session:

- ``event_coverage``: the share of events matched by at least one extracted fact of the same
  session whose subject is the event's speaker, at cosine >= 0.60 with the shipped model;
- ``facts_per_session`` and ``unmatched_fact_share`` (extracted facts matching no event);
- the same for the baseline of storing every sentence of the session, rewritten in the third
  person, as a fact (what selection buys);
- ``summary_similarity``: mean cosine between each episode's summary and the session's summary.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from nous import Nous
from nous.config import Settings
from nous.embeddings import EmbeddingProvider, create_provider
from nous.errors import InvalidInputError
from nous.events.extraction import statements_of, third_person
from nous.events.offline_summary import clean_message
from nous.ingest import parse_conversation
from nous.models import Episode, Fact

MATCH_COSINE = 0.60  # fixed by the benchmark's definition; not a tuning knob
_SESSION = re.compile(r"^session_(\d+)$")
_DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y")


@dataclass(slots=True)
class AnnotatedSession:
    """One LoCoMo session with its annotations."""

    conversation: str
    key: str  # "session_3"
    at: datetime
    messages: list[tuple[str, str, list[str]]]  # (speaker, text, [message id])
    events: list[tuple[str, str]] = field(default_factory=list)  # (speaker, event)
    summary: str | None = None
    annotated: bool = False  # has an events_session_N entry (possibly with no events)


def _date(raw: object, where: str) -> datetime:
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(str(raw), fmt)
        except ValueError:
            continue
    raise InvalidInputError(f"{where}: unreadable date {raw!r}")


def load_sessions(directory: Path, files: int | None = None) -> list[AnnotatedSession]:
    """Every session of the LoCoMo files in ``directory`` with its events and summary."""
    out: list[AnnotatedSession] = []
    paths = sorted(directory.glob("*.json"))[:files]
    if not paths:
        raise InvalidInputError(f"no *.json files in {directory}")
    for path in paths:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InvalidInputError(f"{path.name}: cannot read LoCoMo file: {exc}") from None
        conv = data.get("conversation", data) if isinstance(data, dict) else None
        if not isinstance(conv, dict):
            raise InvalidInputError(f"{path.name}: not a LoCoMo file")
        for key in sorted((k for k in conv if _SESSION.match(k)), key=lambda k: int(k.split("_")[1])):
            turns = conv[key]
            if not isinstance(turns, list) or not turns:
                continue
            events_raw = conv.get(f"events_{key}") or data.get(f"events_{key}")
            events = []
            if isinstance(events_raw, dict):
                for speaker, items in events_raw.items():
                    if speaker != "date" and isinstance(items, list):
                        events += [(speaker, e) for e in items if isinstance(e, str) and e.strip()]
            summary = conv.get(f"{key}_summary") or data.get(f"{key}_summary")
            out.append(
                AnnotatedSession(
                    conversation=path.name,
                    key=key,
                    at=_date(conv.get(f"{key}_date_time"), f"{path.name} {key}_date_time"),
                    messages=[
                        (str(t["speaker"]), clean_message(str(t["text"])), [str(t["dia_id"])])
                        for t in turns
                        if isinstance(t, dict) and t.get("text")
                    ],
                    events=events,
                    summary=summary if isinstance(summary, str) else None,
                    annotated=isinstance(events_raw, dict),
                )
            )
    return out


@dataclass(slots=True)
class _Tally:
    events: int = 0
    covered: int = 0
    facts: int = 0
    unmatched: int = 0
    sessions: int = 0

    def add(
        self, events: list[tuple[str, str]], facts: list[tuple[str, str]], provider: EmbeddingProvider
    ) -> None:
        """Score one session: ``facts`` are (subject, text)."""
        self.sessions += 1
        self.events += len(events)
        self.facts += len(facts)
        if not facts:
            return
        if not events:
            self.unmatched += len(facts)
            return
        sim = provider.embed([e for _, e in events]) @ provider.embed([f for _, f in facts]).T
        same = np.array([[subject == who for subject, _ in facts] for who, _ in events])
        matched = (sim >= MATCH_COSINE) & same
        self.covered += int(matched.any(axis=1).sum())
        self.unmatched += int((~matched.any(axis=0)).sum())

    def figures(self) -> dict[str, float]:
        return {
            "event_coverage": round(self.covered / max(1, self.events), 4),
            "facts_per_session": round(self.facts / max(1, self.sessions), 3),
            "unmatched_fact_share": round(self.unmatched / max(1, self.facts), 4),
        }


async def run_extraction(
    directory: Path,
    *,
    settings: Settings | None = None,
    provider: EmbeddingProvider | None = None,
    files: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Ingest each LoCoMo conversation, run the event pipeline, score its facts and summaries."""
    settings = (settings or Settings()).model_copy(update={"llm_provider": "offline", "events_worker": "off"})
    provider = provider or create_provider(settings)
    sessions = load_sessions(directory, files)
    by_file: dict[str, list[AnnotatedSession]] = {}
    for s in sessions:
        by_file.setdefault(s.conversation, []).append(s)
    pipeline, baseline = _Tally(), _Tally()
    summary_sims: list[float] = []
    started = time.perf_counter()
    for name, file_sessions in by_file.items():
        conversation = parse_conversation((directory / name).read_text(encoding="utf-8"), fmt="locomo")
        with tempfile.TemporaryDirectory(prefix="nous-extraction-") as tmp:
            run_settings = settings.model_copy(update={"database_url": f"sqlite:///{Path(tmp) / 'bench.db'}"})
            async with Nous(run_settings, agent_id="bench", embedding_provider=provider) as nous:
                await nous.ingest(conversation)
                await nous.process_events()
                facts = [
                    f
                    for f in await nous.memories("fact", limit=100_000, include_superseded=True)
                    if isinstance(f, Fact)
                ]
                episodes = [e for e in await nous.memories("episode", limit=10_000) if isinstance(e, Episode)]
        facts_by_session: dict[str, list[tuple[str, str]]] = {}
        for f in facts:
            key = _session_key(f.session_id)
            facts_by_session.setdefault(key, []).append((f.subject or "", f.content))
        summaries = {_session_key(e.session_id): e.summary for e in episodes if e.summary}
        for s in file_sessions:
            if s.annotated:
                pipeline.add(s.events, facts_by_session.get(s.key, []), provider)
                every = [
                    (st.speaker, third_person(st.text, st.speaker, st.at))
                    for st in statements_of(s.messages, s.at)
                ]
                baseline.add(s.events, every, provider)
            if s.summary and summaries.get(s.key):
                a, b = provider.embed([s.summary, summaries[s.key] or ""])
                summary_sims.append(float(a @ b))
        if progress:
            progress(f"{name}: {len(file_sessions)} sessions, {len(facts)} facts")
    return {
        **pipeline.figures(),
        "sessions": pipeline.sessions,
        "events": pipeline.events,
        "facts": pipeline.facts,
        "baseline_every_sentence": baseline.figures(),
        "summary_similarity": round(float(np.mean(summary_sims)), 4) if summary_sims else None,
        "summaries_scored": len(summary_sims),
        "match_cosine": MATCH_COSINE,
        "seconds": round(time.perf_counter() - started, 1),
        "embedding_model": provider.model_name,
    }


def _session_key(session_id: str | None) -> str:
    """'conv-26:session_3' -> 'session_3' (ingest names sessions '<conversation>:<session>')."""
    return (session_id or "").rsplit(":", 1)[-1]


def summarize_figures(result: dict[str, Any]) -> Sequence[Sequence[str]]:
    """Table rows: the pipeline against the every-sentence baseline."""
    base = result["baseline_every_sentence"]
    return [
        [
            "nous (offline pipeline)",
            f"{result['event_coverage']:.3f}",
            f"{result['facts_per_session']:.2f}",
            f"{result['unmatched_fact_share']:.3f}",
        ],
        [
            "every sentence as a fact",
            f"{base['event_coverage']:.3f}",
            f"{base['facts_per_session']:.2f}",
            f"{base['unmatched_fact_share']:.3f}",
        ],
    ]
