"""The blocking wrapper for scripts."""

from __future__ import annotations

from pathlib import Path

from nous import Settings, SyncNous, WriteStatus
from nous.embeddings.base import EmbeddingProvider


def test_sync_wrapper_round_trip(tmp_path: Path, provider: EmbeddingProvider) -> None:
    settings = Settings(home=tmp_path, database_url=f"sqlite:///{tmp_path / 's.db'}")
    with SyncNous(settings, embedding_provider=provider) as nous:
        result = nous.learn("Sync callers can store facts")
        assert result.status is WriteStatus.CREATED
        hits = nous.recall("can synchronous code save facts?")
        assert hits[0].id == result.id
        episode = nous.heart.episodes.start("A sync episode")
        assert nous.get(episode.id).content == "A sync episode"
        assert len(nous.export_lines()) == 3
