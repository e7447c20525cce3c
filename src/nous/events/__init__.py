"""The event pipeline: handlers for outbox events and the worker that runs them."""

from nous.events.handlers import HANDLERS, Handler, handler_for, register_handler
from nous.events.worker import EventWorker, WorkerReport

__all__ = ["HANDLERS", "EventWorker", "Handler", "WorkerReport", "handler_for", "register_handler"]
