"""The blocking wrapper for scripts."""

from __future__ import annotations

from pathlib import Path

from nous import Settings, SyncNous, WriteStatus
from nous.embeddings.base import EmbeddingProvider


def test_sync_wrapper_round_trip(tmp_path: Path, provider: EmbeddingProvider) -> None:
    settings = Settings(home=tmp_path, database_url=f"sqlite:///{tmp_path / 's.db'}", events_worker="off")
    with SyncNous(settings, embedding_provider=provider) as nous:
        result = nous.learn("Sync callers can store facts")
        assert result.status is WriteStatus.CREATED
        hits = nous.recall("can synchronous code save facts?")
        assert hits[0].id == result.id
        episode = nous.start_episode("A sync episode")
        assert nous.get(episode.id).content == "A sync episode"
        assert len(nous.export_lines()) == 3


def test_sync_turn_loop(tmp_path: Path, provider: EmbeddingProvider) -> None:
    settings = Settings(home=tmp_path, database_url=f"sqlite:///{tmp_path / 's.db'}", events_worker="off")
    with SyncNous(settings, embedding_provider=provider) as nous:
        nous.learn("The team standup is at 9:30 every weekday.")
        ctx = nous.pre_turn("s1", "When is the team standup?")
        assert ctx.frame == "question" and "9:30" in ctx.text and ctx.tokens <= ctx.budget
        assert nous.post_turn("s1", "At 9:30 on weekdays.").turn_count == 1
        ended = nous.end_session("s1", reflection="Standups are at 9:30")
        assert ended.session.ended and ended.episode is not None
        assert nous.check_action("delete the standup notes").decision == "allow"
