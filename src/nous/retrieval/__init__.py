"""Retrieval: finding the memories a query needs."""

from nous.retrieval.query import RecallQuery
from nous.retrieval.search import Retriever

__all__ = ["RecallQuery", "Retriever"]
