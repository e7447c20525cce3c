"""Retrieval: finding the memories a query needs."""

from nous.retrieval.search import RecallQuery, Retriever

__all__ = ["RecallQuery", "Retriever"]
