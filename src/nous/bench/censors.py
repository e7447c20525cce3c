"""Censor verdicts against labelled actions: precision and recall of block and of warn.

A file (JSONL) holds one ``{"about": ...}`` line, the censors (``censor``, ``pattern``,
``action``, ``reason``) and the actions (``text``, ``expect``: allow, warn or block, ``censor``:
the one that should fire). Each file's censors are stored in a fresh SQLite store, and every
action is judged by ``Nous.check_action`` (nothing recorded): the figures in force. The sweep
re-decides the same actions at other semantic thresholds from the same similarities.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nous.api import Nous
from nous.bench.jsonl import checkout_data_file, jsonl_rows
from nous.config import Settings
from nous.errors import InvalidInputError
from nous.heart.censor_rules import SEMANTIC_THRESHOLD, match_patterns, meaning_applies, similarities
from nous.models import Censor, CensorAction

VERDICTS = ("allow", "warn", "block")
SWEEP = tuple(round(0.30 + 0.025 * i, 3) for i in range(15))  # 0.300 … 0.650
_STRENGTH = {CensorAction.WARN: 1, CensorAction.BLOCK: 2, CensorAction.ABSOLUTE: 2}


DEFAULT_FILES = (
    "censor_actions.jsonl",
    "censor_actions_holdout.jsonl",
    "censor_actions_holdout2.jsonl",
    "censor_actions_holdout3.jsonl",
    "censor_actions_holdout4.jsonl",
)


def default_censor_paths() -> list[Path]:
    """``tests/data/censor_actions.jsonl`` (development) and the held-out files
    ``censor_actions_holdout.jsonl`` to ``censor_actions_holdout4.jsonl``."""
    found = [checkout_data_file(n) for n in DEFAULT_FILES]
    return [p for p in found if p is not None]


def load_censor_set(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The censors and the labelled actions of one file; a malformed row is an InvalidInputError."""
    censors: list[dict[str, Any]] = []
    actions: list[dict[str, Any]] = []
    for number, row in jsonl_rows(path):
        if not isinstance(row, dict) or "about" in row:
            continue
        if "pattern" in row:
            if row.get("action") not in {a.value for a in CensorAction} or not row.get("censor"):
                raise InvalidInputError(f"{path}:{number}: a censor needs censor, pattern and action")
            censors.append(row)
        elif "text" in row:
            if row.get("expect") not in VERDICTS:
                raise InvalidInputError(f"{path}:{number}: expect must be one of {', '.join(VERDICTS)}")
            actions.append(row)
        else:
            raise InvalidInputError(f"{path}:{number}: neither a censor nor an action")
    if not censors or not actions:
        raise InvalidInputError(f"{path}: needs censors and labelled actions")
    return censors, actions


def scores(predicted: list[str], expected: list[str]) -> dict[str, Any]:
    """Precision and recall of block and of warn (None when nothing was predicted or expected)."""
    figures: dict[str, Any] = {}
    for verdict in ("block", "warn"):
        tp = sum(p == verdict == e for p, e in zip(predicted, expected, strict=True))
        said = sum(p == verdict for p in predicted)
        truly = sum(e == verdict for e in expected)
        figures[verdict] = {
            "precision": round(tp / said, 3) if said else None,
            "recall": round(tp / truly, 3) if truly else None,
            "expected": truly,
            "predicted": said,
        }
    return figures


async def run_censor_set(
    path: Path, settings: Settings | None = None, progress: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Judge every action of ``path`` against its censors; the figures in force and the sweep."""
    censor_rows, actions = load_censor_set(path)
    base = (settings or Settings()).model_copy(update={"events_worker": "off"})
    with tempfile.TemporaryDirectory() as tmp:
        run_settings = base.model_copy(
            update={"home": Path(tmp), "database_url": f"sqlite:///{Path(tmp) / 'censors.db'}"}
        )
        async with Nous(run_settings, agent_id="censor-bench") as nous:
            names: dict[str, str] = {}
            for row in censor_rows:
                written = await nous.add_censor(
                    row["pattern"], action=row["action"], reason=row.get("reason"), dedup=False
                )
                names[written.id] = row["censor"]
            censors = await nous.heart.censors.active(limit=len(censor_rows))
            if progress:
                progress(f"{path.name}: judging {len(actions)} actions against {len(censors)} censors")
            predicted: list[str] = []
            errors: list[dict[str, Any]] = []
            sweep_inputs: list[list[tuple[Censor, bool, float]]] = []
            for action in actions:
                verdict = await nous.check_action(action["text"], record=False)
                predicted.append(verdict.decision.value)
                if verdict.decision.value != action["expect"]:
                    errors.append(
                        {
                            "text": action["text"],
                            "expect": action["expect"],
                            "got": verdict.decision.value,
                            "fired": [
                                f"{names.get(m.censor.id, m.censor.id[:8])} ({m.how}"
                                + (f" {m.similarity:.2f})" if m.similarity is not None else ")")
                                for m in verdict.matches
                            ],
                        }
                    )
                sims = await similarities(nous.heart.censors.repo, action["text"], censors)
                hits = await match_patterns([c.trigger_pattern for c in censors], action["text"])
                sweep_inputs.append(
                    [
                        (
                            c,
                            hit is not False,
                            sims[c.id] if meaning_applies(c, action["text"]) else -1.0,
                        )
                        for c, hit in zip(censors, hits, strict=True)
                    ]
                )
    expected = [a["expect"] for a in actions]
    sweep = []
    for threshold in SWEEP:
        decided = [
            VERDICTS[max([_STRENGTH[c.action] for c, hit, sim in row if hit or sim >= threshold], default=0)]
            for row in sweep_inputs
        ]
        sweep.append({"threshold": threshold, **scores(decided, expected)})
    return {
        "file": path.name,
        "censors": len(censor_rows),
        "actions": len(actions),
        "threshold": SEMANTIC_THRESHOLD,
        **scores(predicted, expected),
        "sweep": sweep,
        "errors": errors,
    }
