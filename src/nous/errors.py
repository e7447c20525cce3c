"""One exception hierarchy for everything Nous raises on purpose."""

from __future__ import annotations


class NousError(Exception):
    """Base class of every error Nous raises deliberately."""

    code: str = "nous_error"
    http_status: int = 500


class InvalidInputError(NousError, ValueError):
    """The caller passed something Nous cannot store or act on."""

    code = "invalid_input"
    http_status = 422

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class NotFoundError(NousError, LookupError):
    """No memory (or other object) exists with the given id."""

    code = "not_found"
    http_status = 404


class ConflictError(NousError):
    """The operation conflicts with the current state (e.g. an ambiguous id prefix)."""

    code = "conflict"
    http_status = 409


class StaleWriteError(ConflictError):
    """A memory changed between the read and the write that was based on it; read it again."""

    code = "stale_write"


class LeaseLostError(ConflictError):
    """A worker tried to complete an event whose lease it no longer holds (it ran out and another
    worker claimed the event); its effect was rolled back."""

    code = "lease_lost"


class GuardrailError(NousError):
    """A guardrail blocked the operation. Besides the message, it says which rule refused
    (``guardrail``), its reason (``problem``) and what would satisfy it: at least one reason
    (``needs_reasons``), a confidence of at least ``min_confidence``; so each interface can say
    what to do in its own terms (the CLI names its options)."""

    code = "guardrail_blocked"
    http_status = 422

    def __init__(
        self,
        message: str,
        *,
        guardrail: str | None = None,
        problem: str | None = None,
        needs_reasons: bool = False,
        min_confidence: float | None = None,
    ) -> None:
        super().__init__(message)
        self.guardrail = guardrail
        self.problem = problem or message
        self.needs_reasons = needs_reasons
        self.min_confidence = min_confidence


class StorageError(NousError):
    """The storage backend failed or is misconfigured. Its message is one line: a driver's own
    message may run on over several ("…unexpectedly\n\tThis probably means…"), and a CLI prints
    one line and a log keeps one line per error."""

    code = "storage_error"
    http_status = 503

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))


class EmbeddingError(NousError):
    """The embedding provider failed or is misconfigured."""

    code = "embedding_error"
    http_status = 503


class StepDoneError(ConflictError):
    """This step of an event's handler was applied by an earlier attempt; its repeat is rolled back."""

    code = "step_done"


class AuthenticationError(NousError):
    """The request carried no valid API key."""

    code = "unauthorized"
    http_status = 401


class PermissionDeniedError(NousError):
    """The key is valid but may not do this (a user-bound key changing the agent's shared memory,
    or asking for an agent-wide view)."""

    code = "forbidden"
    http_status = 403


class LLMError(NousError):
    """The language model provider failed, timed out, refused (429/5xx) or is misconfigured."""

    code = "llm_error"
    http_status = 503


class LLMOutputError(LLMError):
    """The language model answered, but not with what was asked (invalid JSON, or JSON that fails
    the schema) even after one repair request."""

    code = "llm_output_error"
    http_status = 502
