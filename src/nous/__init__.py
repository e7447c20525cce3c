"""Nous — long-term memory for AI agents.

The public surface is re-exported here; everything else is private to its module.
"""

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
