"""Extraction quality: are the pipeline's facts worth keeping, and do they match what people
annotated?

Each ``*.json`` file of a folder is a conversation: a LoCoMo file, or a chat in Nous's native
format (a labelled conversation's ``questions`` are ignored). For each: a fresh store, ingest
with the offline provider, the event pipeline run to completion, then:

- on every file, the checks a reader would make of each stored fact (``bench/junk.py``): from an
  assistant's turn, code or a URL, over 300 characters, a request or question turned into a
  sentence, a near-duplicate of an earlier fact of the same scope; facts per session, their
  categories and subjects; summaries that read as a transcript fragment; and what a reader of
  the facts and summaries would correct: sentence fragments (facts, and summary sentences), "and
  family" where no family was mentioned, relative dates left unresolved, one person under
  several subjects;
- on LoCoMo files, which annotate per session and speaker the events of people's lives
  (``events_session_N``: "Caroline attends an LGBTQ support group for the first time.") and a
  summary (``session_N_summary``):
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
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from nous import Nous
from nous.bench.junk import (
    JUNK_CHECKS,
    NEW_CHECKS,
    JunkTally,
    StoredFact,
    check_facts,
    has_code,
    has_url,
    is_fragment,
    verb_uses,
)
from nous.config import Settings
from nous.embeddings import EmbeddingProvider, create_provider
from nous.errors import InvalidInputError
from nous.events.extraction import sentences, third_person
from nous.ingest import Conversation, parse_conversation
from nous.language.topics import clean_message
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
    paths = sorted(directory.glob("*.json"))[:files]
    if not paths:
        raise InvalidInputError(f"no *.json files in {directory}")
    return [s for path in paths for s in load_file_sessions(path)]


def load_file_sessions(path: Path) -> list[AnnotatedSession]:
    """Every session of one LoCoMo file with its events and summary."""
    out: list[AnnotatedSession] = []
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


def _kind(path: Path) -> str:
    """'chat' for a native-format file (a top-level ``sessions`` list), else 'locomo'."""
    head = path.read_text(encoding="utf-8")[:4000]
    return "chat" if '"sessions"' in head else "locomo"


def _conversation(path: Path, kind: str) -> Conversation:
    text = path.read_text(encoding="utf-8")
    if kind == "locomo":
        return parse_conversation(text, fmt="locomo")
    data = json.loads(text)
    if isinstance(data, dict):
        data.pop("questions", None)  # a labelled conversation: the questions are not ingested
    return parse_conversation(json.dumps(data), fmt="native")


def summary_fragment(summary: str, speakers: Iterable[str] = ()) -> bool:
    """A summary a reader would not keep as one: a transcript line ("the user: ...", "Caroline:
    ..."), code or a URL."""
    labels = "|".join(re.escape(s) for s in {*speakers, "user", "the user", "assistant"})
    line = re.compile(rf"(?:^|[.!?]\s+)(?:{labels}):\s", re.IGNORECASE)
    return bool(line.search(summary)) or has_code(summary) or has_url(summary)


async def run_extraction(
    directory: Path,
    *,
    settings: Settings | None = None,
    provider: EmbeddingProvider | None = None,
    files: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Ingest each conversation of ``directory`` (LoCoMo files, native-format chats, or both), run
    the event pipeline, and check its facts and summaries: junk checks on every file, event
    coverage and summary similarity where LoCoMo annotates them."""
    settings = (settings or Settings()).model_copy(update={"llm_provider": "offline", "events_worker": "off"})
    provider = provider or create_provider(settings)
    paths = sorted(directory.glob("*.json"))[:files]
    if not paths:
        raise InvalidInputError(f"no *.json files in {directory}")
    pipeline, baseline, junk = _Tally(), _Tally(), JunkTally()
    summary_sims: list[float] = []
    categories: Counter[str] = Counter()
    subjects: Counter[str] = Counter()
    per_file: list[dict[str, Any]] = []
    samples: dict[str, list[Any]] = {"facts": [], "summaries": [], "summary_fragments": []}
    sessions_seen = fragments = summary_sentences = summary_sentence_fragments = 0
    kinds: set[str] = set()
    started = time.perf_counter()
    for path in paths:
        kind = _kind(path)
        kinds.add(kind)
        conversation = _conversation(path, kind)
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
        facts.sort(key=lambda f: (f.created_at, f.id))
        roles = {m.id: m.role for s in conversation.sessions for m in s.messages}
        said = {m.id: m.content for s in conversation.sessions for m in s.messages}
        stored = [
            StoredFact(f.content, f.subject or "", f.user_id, list(f.provenance.turn_ids), f.category or "")
            for f in facts
        ]
        file_junk = JunkTally()
        vectors = provider.embed([f.text for f in stored]) if stored else np.zeros((0, 1))
        named = {m.name for s in conversation.sessions for m in s.messages if m.name and m.role == "user"}
        check_facts(stored, vectors, roles, said, file_junk, named or {"the user"})
        check_facts(stored, vectors, roles, said, junk, named or {"the user"})
        categories.update(f.category or "none" for f in facts)
        subjects.update(f.subject or "none" for f in facts)
        sessions_seen += len(conversation.sessions)
        summaries = {_session_key(e.session_id): e for e in episodes if e.summary}
        speakers = {m.name or m.role for s in conversation.sessions for m in s.messages}
        fragments += sum(summary_fragment(e.summary or "", speakers) for e in summaries.values())
        uses = verb_uses(said.values())
        for e in summaries.values():
            broken = [x for x in sentences(e.summary or "") if is_fragment(x, uses)]
            summary_sentences += len(sentences(e.summary or ""))
            if broken:
                summary_sentence_fragments += len(broken)
                if len(samples["summary_fragments"]) < 8:
                    samples["summary_fragments"].append(f"{e.title} | {broken[0]}")
        samples["facts"] += [
            f"[{f.category}|{f.subject}] {f.content}" for f in facts[:: max(1, len(facts) // 6)][:6]
        ]
        samples["summaries"] += [
            {"title": e.title, "summary": e.summary} for e in list(summaries.values())[:2]
        ]
        if kind == "locomo":
            _score_locomo(path, facts, summaries, provider, pipeline, baseline, summary_sims)
        per_file.append(
            {
                "file": path.name,
                "kind": kind,
                "sessions": len(conversation.sessions),
                **{k: v for k, v in file_junk.figures().items() if k != "examples"},
            }
        )
        if progress:
            progress(f"{path.name}: {len(conversation.sessions)} sessions, {len(facts)} facts")
    annotated = pipeline.sessions > 0
    return {
        "dataset": directory.name,
        "kinds": sorted(kinds),
        "files": len(paths),
        "conversation_sessions": sessions_seen,
        **(pipeline.figures() if annotated else dict.fromkeys(pipeline.figures())),
        "sessions": pipeline.sessions,
        "events": pipeline.events,
        "facts": junk.facts,
        "facts_per_conversation_session": round(junk.facts / max(1, sessions_seen), 3),
        "junk": junk.figures(),
        "categories": dict(categories.most_common()),
        "subjects": dict(subjects.most_common(10)),
        "summary_fragments": fragments,
        "summary_sentences": summary_sentences,
        "summary_sentence_fragments": summary_sentence_fragments,
        "per_file": per_file,
        "samples": samples,
        "baseline_every_sentence": baseline.figures() if annotated else None,
        "summary_similarity": round(float(np.mean(summary_sims)), 4) if summary_sims else None,
        "summaries_scored": len(summary_sims),
        "match_cosine": MATCH_COSINE,
        "seconds": round(time.perf_counter() - started, 1),
        "embedding_model": provider.model_name,
    }


def _score_locomo(
    path: Path,
    facts: list[Fact],
    summaries: dict[str, Episode],
    provider: EmbeddingProvider,
    pipeline: _Tally,
    baseline: _Tally,
    summary_sims: list[float],
) -> None:
    """Event coverage of one LoCoMo file's facts, against storing every sentence; summary cosine."""
    facts_by_session: dict[str, list[tuple[str, str]]] = {}
    for f in facts:
        facts_by_session.setdefault(_session_key(f.session_id), []).append((f.subject or "", f.content))
    for s in load_file_sessions(path):
        if s.annotated:
            pipeline.add(s.events, facts_by_session.get(s.key, []), provider)
            every = [(sp, third_person(x, sp, s.at)) for sp, text, _ in s.messages for x in sentences(text)]
            baseline.add(s.events, every, provider)
        episode = summaries.get(s.key)
        if s.summary and episode is not None and episode.summary:
            a, b = provider.embed([s.summary, episode.summary])
            summary_sims.append(float(a @ b))


def _session_key(session_id: str | None) -> str:
    """'@0::7:conv-26:session_3' -> 'session_3' (an ingested session's stored id ends in
    ':<session>', ``ingested_session_key``)."""
    return (session_id or "").rsplit(":", 1)[-1]


def summarize_figures(result: dict[str, Any]) -> Sequence[Sequence[str]]:
    """Table rows: the pipeline against the every-sentence baseline (LoCoMo files only)."""
    base = result["baseline_every_sentence"]
    if base is None:
        return []
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


def junk_rows(result: dict[str, Any]) -> Sequence[Sequence[str]]:
    """Table rows: per check, the facts failing it (count and share of all facts)."""
    junk = result["junk"]
    return [
        [check, str(junk[check]), f"{junk[f'{check}_share']:.3f}"] for check in (*JUNK_CHECKS, *NEW_CHECKS)
    ]
