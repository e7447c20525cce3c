"""LoCoMo as labelled conversations: an adapter onto the one retrieval benchmark.

Each LoCoMo file becomes a labelled conversation (``nous.bench.labelled.from_locomo``): questions
of categories 1-4 with evidence, one evidence group per turn, asked just after the last message.
Scoring, baselines and figures are those of ``nous.bench.retrieval``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from nous.bench.labelled import LabelledConversation, from_locomo, load_labelled
from nous.bench.retrieval import run_retrieval
from nous.config import Settings
from nous.embeddings import EmbeddingProvider


def conversation_files(directory: Path, limit_files: int | None = None) -> list[Path]:
    """The ``*.json`` files of a folder, sorted; FileNotFoundError when there are none."""
    files = sorted(directory.glob("*.json"))[:limit_files]
    if not files:
        raise FileNotFoundError(f"no *.json conversation files in {directory}")
    return files


def load_locomo_dir(directory: Path, limit_files: int | None = None) -> list[LabelledConversation]:
    return [from_locomo(p) for p in conversation_files(directory, limit_files)]


def load_labelled_dir(directory: Path, limit_files: int | None = None) -> list[LabelledConversation]:
    return [load_labelled(p) for p in conversation_files(directory, limit_files)]


def load_any_dir(directory: Path, limit_files: int | None = None) -> list[LabelledConversation]:
    """LoCoMo files and labelled conversations alike: a file with a top-level ``sessions`` list is
    in the labelled format, anything else is read as LoCoMo."""
    out = []
    for path in conversation_files(directory, limit_files):
        head = path.read_text(encoding="utf-8")[:4000]
        out.append(load_labelled(path) if '"sessions"' in head else from_locomo(path))
    return out


async def run_locomo(
    directory: Path,
    *,
    ks: tuple[int, ...] = (5, 10, 20),
    settings: Settings | None = None,
    provider: EmbeddingProvider | None = None,
    limit_files: int | None = None,
    presets: Sequence[str] = (),
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The retrieval benchmark over every LoCoMo ``*.json`` file in ``directory``."""
    return await run_retrieval(
        load_locomo_dir(directory, limit_files),
        ks=ks,
        settings=settings,
        provider=provider,
        presets=presets,
        progress=progress,
    )
