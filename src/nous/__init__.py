"""Nous — long-term memory for AI agents.

The public surface is re-exported here; everything else is private to its module. The names are
imported on first use (``from nous import Nous`` works as ever), so that ``import nous`` and the
command line, which needs only the command it runs, do not load the whole library.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nous._lazy import lazy_exports

if TYPE_CHECKING:
    from nous.api import Nous, SyncNous
    from nous.client import AsyncClient, Client
    from nous.cognitive import Context, SessionEnd, TurnContext, TurnResult
    from nous.config import Settings
    from nous.errors import (
        AuthenticationError,
        ConflictError,
        EmbeddingError,
        GuardrailError,
        InvalidInputError,
        LeaseLostError,
        LLMError,
        LLMOutputError,
        NotFoundError,
        NousError,
        PermissionDeniedError,
        StaleWriteError,
        StepDoneError,
        StorageError,
    )
    from nous.events import EventWorker, PipelineContext, WorkerReport
    from nous.heart import ActionCheck, ActionDecision, CensorMatch
    from nous.ingest import Conversation, IngestReport
    from nous.memory.dedup import SimilarityCheck
    from nous.models import (
        Censor,
        CensorAction,
        Decision,
        DecisionCategory,
        Episode,
        EpisodeOutcome,
        Fact,
        FactCategory,
        LifecycleState,
        Memory,
        MemoryKind,
        Procedure,
        Provenance,
        Reason,
        RecallHit,
        Stakes,
        Turn,
        WriteResult,
        WriteStatus,
    )
    from nous.models.brain import Calibration
    from nous.models.events import Event, EventKind, EventStatus
    from nous.models.llm import LLMUsage
    from nous.models.results import (
        Edge,
        EdgeRelation,
        ErasureReceipt,
        HistoryEntry,
        MaintenanceReport,
        StoreStats,
    )
    from nous.models.session import IdentitySection, SessionState
    from nous.models.threads import Thread, ThreadMember
    from nous.retrieval.weights import PRESETS, RetrievalWeights

__version__ = "0.1.0"

# Each public name and the module it is defined in (imported when the name is first read).
_EXPORTS: dict[str, str] = {
    "Nous": "nous.api",
    "SyncNous": "nous.api",
    "AsyncClient": "nous.client",
    "Client": "nous.client",
    "Context": "nous.cognitive",
    "SessionEnd": "nous.cognitive",
    "TurnContext": "nous.cognitive",
    "TurnResult": "nous.cognitive",
    "Settings": "nous.config",
    "AuthenticationError": "nous.errors",
    "ConflictError": "nous.errors",
    "EmbeddingError": "nous.errors",
    "GuardrailError": "nous.errors",
    "InvalidInputError": "nous.errors",
    "LeaseLostError": "nous.errors",
    "LLMError": "nous.errors",
    "LLMOutputError": "nous.errors",
    "NotFoundError": "nous.errors",
    "NousError": "nous.errors",
    "PermissionDeniedError": "nous.errors",
    "StaleWriteError": "nous.errors",
    "StepDoneError": "nous.errors",
    "StorageError": "nous.errors",
    "EventWorker": "nous.events",
    "PipelineContext": "nous.events",
    "WorkerReport": "nous.events",
    "ActionCheck": "nous.heart",
    "ActionDecision": "nous.heart",
    "CensorMatch": "nous.heart",
    "Conversation": "nous.ingest",
    "IngestReport": "nous.ingest",
    "SimilarityCheck": "nous.memory.dedup",
    "Censor": "nous.models",
    "CensorAction": "nous.models",
    "Decision": "nous.models",
    "DecisionCategory": "nous.models",
    "Episode": "nous.models",
    "EpisodeOutcome": "nous.models",
    "Fact": "nous.models",
    "FactCategory": "nous.models",
    "LifecycleState": "nous.models",
    "Memory": "nous.models",
    "MemoryKind": "nous.models",
    "Procedure": "nous.models",
    "Provenance": "nous.models",
    "Reason": "nous.models",
    "RecallHit": "nous.models",
    "Stakes": "nous.models",
    "Turn": "nous.models",
    "WriteResult": "nous.models",
    "WriteStatus": "nous.models",
    "Calibration": "nous.models.brain",
    "Event": "nous.models.events",
    "EventKind": "nous.models.events",
    "EventStatus": "nous.models.events",
    "LLMUsage": "nous.models.llm",
    "Edge": "nous.models.results",
    "EdgeRelation": "nous.models.results",
    "ErasureReceipt": "nous.models.results",
    "HistoryEntry": "nous.models.results",
    "MaintenanceReport": "nous.models.results",
    "StoreStats": "nous.models.results",
    "IdentitySection": "nous.models.session",
    "SessionState": "nous.models.session",
    "Thread": "nous.models.threads",
    "ThreadMember": "nous.models.threads",
    "PRESETS": "nous.retrieval.weights",
    "RetrievalWeights": "nous.retrieval.weights",
}


__all__ = [
    "PRESETS",
    "ActionCheck",
    "ActionDecision",
    "AsyncClient",
    "AuthenticationError",
    "Calibration",
    "Censor",
    "CensorAction",
    "CensorMatch",
    "Client",
    "ConflictError",
    "Context",
    "Conversation",
    "Decision",
    "DecisionCategory",
    "Edge",
    "EdgeRelation",
    "EmbeddingError",
    "Episode",
    "EpisodeOutcome",
    "ErasureReceipt",
    "Event",
    "EventKind",
    "EventStatus",
    "EventWorker",
    "Fact",
    "FactCategory",
    "GuardrailError",
    "HistoryEntry",
    "IdentitySection",
    "IngestReport",
    "InvalidInputError",
    "LLMError",
    "LLMOutputError",
    "LLMUsage",
    "LeaseLostError",
    "LifecycleState",
    "MaintenanceReport",
    "Memory",
    "MemoryKind",
    "NotFoundError",
    "Nous",
    "NousError",
    "PermissionDeniedError",
    "PipelineContext",
    "Procedure",
    "Provenance",
    "Reason",
    "RecallHit",
    "RetrievalWeights",
    "SessionEnd",
    "SessionState",
    "Settings",
    "SimilarityCheck",
    "Stakes",
    "StaleWriteError",
    "StepDoneError",
    "StorageError",
    "StoreStats",
    "SyncNous",
    "Thread",
    "ThreadMember",
    "Turn",
    "TurnContext",
    "TurnResult",
    "WorkerReport",
    "WriteResult",
    "WriteStatus",
    "__version__",
]


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
