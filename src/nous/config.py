"""All configuration in one place: environment variables with the ``NOUS_`` prefix."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def default_home() -> Path:
    """Directory for the embedded store and other local state."""
    return Path.home() / ".nous"


class Settings(BaseSettings):
    """Runtime configuration. Every field can be set as ``NOUS_<FIELD>``."""

    model_config = SettingsConfigDict(env_prefix="NOUS_", env_file=".env", extra="ignore")

    home: Path = Field(default_factory=default_home, description="Local state directory.")
    database_url: str | None = Field(
        default=None,
        description="sqlite:///path.db or postgresql://...; default: sqlite in NOUS_HOME.",
    )
    agent_id: str = Field(default="default", min_length=1, max_length=200)

    embedding_provider: str = Field(default="local", description="local | openai | a plugin name")
    embedding_model: str | None = Field(default=None, description="Provider-specific model name.")
    embedding_api_base: str = "https://api.openai.com/v1"
    embedding_api_key: str | None = None
    embedding_dimensions: int | None = Field(default=None, ge=1, le=8192)
    embedding_batch_size: int = Field(default=64, ge=1, le=2048)
    embedding_timeout_s: float = Field(default=30.0, gt=0)
    embedding_chunk_chars: int = Field(
        default=0,
        ge=0,
        description="Characters per chunk when embedding long memories (each chunk gets its own "
        "vector; a memory scores by its best one); 0 (default) embeds every memory whole. 700 suits "
        "the local model. Off by default: on the long chats it cost 3x ingest and lowered dense recall.",
    )

    max_content_bytes: int = Field(default=100_000, ge=1)
    dedup_duplicate_threshold: float = Field(
        default=0.62,
        gt=0,
        le=1,
        description="Cosine from which a close, non-conflicting memory is a duplicate.",
    )
    dedup_connect_threshold: float = Field(
        default=0.50, gt=0, le=1, description="Cosine from which a new memory is linked to an existing one."
    )
    decision_guardrails: list[dict[str, Any]] | None = Field(
        default=None,
        description="JSON list of guardrails (name, action warn|block, stakes, min_confidence, "
        "require_reasons, message); default: the built-in set.",
    )
    dedup_kinds: str = Field(
        default="fact,procedure,censor", description="Comma-separated kinds checked before storing."
    )
    recall_min_score: float = Field(
        default=0.03,
        ge=0,
        le=1,
        description="Recall leaves out results scoring below this relevance (0..1), unless a call "
        "gives its own min_score; chosen from the abstention figures (docs/retrieval.md).",
    )
    recent_hours: float = Field(
        default=48.0,
        gt=0,
        le=24 * 3650,
        description="How far back the context's recent-conversations tier and recall_recent look.",
    )
    postgres_pool_size: int = Field(default=4, ge=1, le=64)
    postgres_index_build_mb: int = Field(
        default=1024,
        ge=64,
        le=65536,
        description="PostgreSQL: memory (MB) for building the vector index after a bulk load into an "
        "empty store (an import, bench scale); a million 384-dimension vectors need about 2000.",
    )
    connect_timeout_s: float = Field(
        default=5.0, gt=0, le=600, description="How long opening a PostgreSQL store may wait for the server."
    )
    sqlite_readers: int = Field(default=4, ge=1, le=32)
    startup_wait_s: float = Field(
        default=60.0,
        ge=0,
        le=3600,
        description="nous serve: how long a request that arrives while the server is starting waits "
        "for the embedding model and vector index to load before it gets 503 (code starting).",
    )
    request_timeout_s: float = Field(
        default=30.0,
        gt=0,
        le=3600,
        description="nous serve: how long a client may take to send a request's headers, and its body.",
    )
    idempotency_retention_hours: float = Field(
        default=24.0,
        gt=0,
        le=8_760,
        description="nous serve: how long an Idempotency-Key and its first answer are kept (nous maintain prunes them).",
    )
    idempotency_lease_seconds: float = Field(
        default=60.0,
        gt=0,
        le=86_400,
        description="nous serve: after this, a retry may take over a key whose request stopped before writing.",
    )
    access_log: bool = Field(
        default=False,
        description="nous serve: log one line per request (client, method, path, status) on stdout.",
    )
    lock_timeout_s: float = Field(
        default=30.0,
        gt=0,
        le=3600,
        description="How long a write waits for a store locked by another process.",
    )
    llm_provider: str = Field(
        default="offline", description="offline (no LLM, no network) | openai | anthropic | a plugin name"
    )
    llm_model: str | None = Field(default=None, description="Provider-specific model name.")
    llm_api_base: str | None = Field(
        default=None, description="API base URL (e.g. http://localhost:11434/v1)."
    )
    llm_api_key: str | None = Field(default=None, description="API key, if the API needs one.")
    llm_timeout_s: float = Field(default=60.0, gt=0, le=3_600)
    session_timeout_minutes: float = Field(
        default=30.0,
        ge=0,
        le=525_600,
        description="A live session idle this long is ended (and so summarised); 0 never ends one.",
    )
    events_worker: Literal["in-process", "off"] = Field(
        default="in-process",
        description="in-process: a Nous object runs outbox events in the background while open; "
        "off: leave them to `nous worker` or `nous maintain --events`.",
    )
    event_lease_seconds: float = Field(default=60.0, gt=0, le=86_400)
    event_max_attempts: int = Field(default=5, ge=1, le=100)
    event_retry_seconds: float = Field(default=2.0, gt=0, le=86_400)
    event_poll_seconds: float = Field(default=1.0, gt=0, le=3_600)

    @field_validator("home", mode="before")
    @classmethod
    def _expand_home(cls, value: object) -> object:
        return Path(value).expanduser() if isinstance(value, str | Path) else value

    def resolved_database_url(self) -> str:
        """The database URL, defaulting to an SQLite file inside ``home``."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.home / 'nous.db'}"
