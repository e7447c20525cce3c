"""Conversation ingestion: parse multi-session conversations and store them as episodes and turns."""

from nous.ingest.formats import Conversation, ConversationMessage, ConversationSession, parse_conversation
from nous.ingest.ingest import IngestReport, ingest_conversation, ingested_session_key

__all__ = [
    "Conversation",
    "ConversationMessage",
    "ConversationSession",
    "IngestReport",
    "ingest_conversation",
    "ingested_session_key",
    "parse_conversation",
]
