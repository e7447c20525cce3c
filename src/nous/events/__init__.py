"""The event pipeline: handlers for outbox events and the worker that runs them."""

from nous.events.context import Handler, PipelineContext
from nous.events.handlers import HANDLERS, handler_for, register_handler
from nous.events.worker import EventWorker, WorkerReport

__all__ = [
    "HANDLERS",
    "EventWorker",
    "Handler",
    "PipelineContext",
    "WorkerReport",
    "handler_for",
    "register_handler",
]
