"""Conversation ingestion: parse multi-session conversations and store them as episodes and turns."""

from nous.ingest.formats import Conversation, ConversationMessage, ConversationSession, parse_conversation
from nous.ingest.ingest import IngestReport, ingest_conversation

__all__ = [
    "Conversation",
    "ConversationMessage",
    "ConversationSession",
    "IngestReport",
    "ingest_conversation",
    "parse_conversation",
]
