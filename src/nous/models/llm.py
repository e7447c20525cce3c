"""Language-model usage records."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from nous._time import utcnow


class LLMCall(BaseModel):
    """One call to a language model: who, what for, and its tokens."""

    model_config = ConfigDict(extra="forbid")

    agent_id: str
    provider: str
    model: str
    purpose: str  # e.g. "episode_summary", "fact_extraction"
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    latency_ms: float = Field(default=0.0, ge=0)
    ok: bool = True
    at: datetime = Field(default_factory=utcnow)


class LLMUsage(BaseModel):
    """Calls and tokens per provider, model and purpose."""

    provider: str
    model: str
    purpose: str
    calls: int
    failed: int
    input_tokens: int
    output_tokens: int
