"""Nous — long-term memory for AI agents.

The public surface is re-exported here; everything else is private to its module.
"""

from nous.api import Nous, SyncNous
from nous.config import Settings
from nous.errors import (
    ConflictError,
    EmbeddingError,
    GuardrailError,
    InvalidInputError,
    NotFoundError,
    NousError,
    StaleWriteError,
    StorageError,
)
from nous.heart import ActionCheck, ActionDecision, CensorMatch
from nous.models import (
    Censor,
    CensorAction,
    Decision,
    Episode,
    Fact,
    Memory,
    MemoryKind,
    Procedure,
    Reason,
    RecallHit,
    Turn,
    WriteResult,
    WriteStatus,
)
from nous.retrieval.weights import PRESETS, RetrievalWeights

__version__ = "0.1.0"

__all__ = [
    "PRESETS",
    "ActionCheck",
    "ActionDecision",
    "Censor",
    "CensorAction",
    "CensorMatch",
    "ConflictError",
    "Decision",
    "EmbeddingError",
    "Episode",
    "Fact",
    "GuardrailError",
    "InvalidInputError",
    "Memory",
    "MemoryKind",
    "NotFoundError",
    "Nous",
    "NousError",
    "Procedure",
    "Reason",
    "RecallHit",
    "RetrievalWeights",
    "Settings",
    "StaleWriteError",
    "StorageError",
    "SyncNous",
    "Turn",
    "WriteResult",
    "WriteStatus",
    "__version__",
]
