"""The shared write/read path every organ uses: validation, embedding, audit."""

from nous.memory.repository import MemoryRepository

__all__ = ["MemoryRepository"]
