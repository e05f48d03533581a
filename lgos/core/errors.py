"""Errors LGOS raises on purpose. Each one knows the OpenAI error it becomes.

They live outside `http/` and `wire/` because every layer raises them: the runner rejects a stale
interrupt answer, the decoder rejects a malformed field, the registry rejects an unknown model.
The HTTP layer is the only place that turns them into status codes and envelopes.
"""

from __future__ import annotations

import sys

# What a client sees of an unexpected failure; the details go to the logs only.
SERVER_ERROR_MESSAGE = "The server had an error while processing your request."


class LgosError(Exception):
    """An error whose message is safe to show to the client."""

    status_code = 400
    error_type = "invalid_request_error"

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code

    @property
    def retryable(self) -> bool:
        """Whether a client should retry. The SDKs retry 408/409/429/5xx unless told otherwise."""
        return self.status_code >= 500 or self.status_code == 429


class InvalidRequestError(LgosError):
    """The request is malformed or asks for something this server does not support (400)."""


class InvalidAnswerError(InvalidRequestError):
    """Raise it in a graph node, right after `interrupt()`, to refuse an answer and ask again.

    The client gets a 400 with this message, `param` naming the answer it sent, and the
    question stays pending under the same call id. Raised later (after the node that asked
    finished), the question is gone and the request fails with the message like any 400.
    """

    def __init__(self, message: str, *, param: str = "input") -> None:
        super().__init__(message, param=param, code="invalid_answer")


class RunFailedError(LgosError):
    """A resume whose run already failed after taking the answer: the original failure, again
    (a client retrying a 5xx must not be told the question was answered)."""

    status_code = 500
    error_type = "server_error"

    def __init__(self) -> None:
        super().__init__(SERVER_ERROR_MESSAGE, code="server_error")


class NotFoundError(LgosError):
    status_code = 404


class ModelNotFoundError(NotFoundError):
    def __init__(self, model: str) -> None:
        super().__init__(
            f"The model '{model}' does not exist or you do not have access to it.",
            param="model",
            code="model_not_found",
        )


class PayloadTooLargeError(LgosError):
    status_code = 413

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"The request body is larger than this server accepts ({limit} bytes).",
            code="request_too_large",
        )


class RequestTimeoutError(LgosError):
    """The client sent its headers but not its body in time (408, which clients retry)."""

    status_code = 408

    def __init__(self, seconds: float) -> None:
        super().__init__(
            f"The request body did not arrive within {seconds:g} seconds.",
            code="request_timeout",
        )


class AuthenticationError(LgosError):
    """No credentials, or ones this server does not know (401, as OpenAI answers a bad key).
    The message never repeats what the client sent: a mistyped key is still a secret."""

    status_code = 401

    def __init__(
        self, message: str = "Incorrect or missing API key.", *, code: str = "invalid_api_key"
    ) -> None:
        super().__init__(message, code=code)


class PermissionDeniedError(LgosError):
    """Known credentials that may not do this (403)."""

    status_code = 403

    def __init__(self, message: str = "You may not do this.", *, code: str = "forbidden") -> None:
        super().__init__(message, code=code)


class ConflictError(LgosError):
    """A well-formed request that the current state of a run cannot accept (409, final)."""

    status_code = 409


class InterruptConflictError(ConflictError):
    def __init__(self, message: str) -> None:
        super().__init__(message, param="input", code="interrupt_state_conflict")


class RunBusyError(ConflictError):
    def __init__(self) -> None:
        super().__init__(
            "Another request is currently running this conversation's graph; "
            "wait for it to finish and try again.",
            param="previous_response_id",
            code="run_busy",
        )


class IdempotencyKeyReusedError(ConflictError):
    """409 on every create (background ones too): the key names another request."""

    def __init__(self) -> None:
        super().__init__(
            "This Idempotency-Key was already used with a different request body.",
            param="Idempotency-Key",
            code="idempotency_key_reused",
        )


class ServiceUnavailableError(LgosError):
    """Something the request needs is away for now (503 with `Retry-After`, which the SDKs
    retry by themselves): the same request may succeed in a few seconds."""

    status_code = 503
    error_type = "server_error"

    def __init__(self, message: str, *, code: str, retry_after_seconds: int = 1) -> None:
        super().__init__(message, code=code)
        self.retry_after_seconds = retry_after_seconds


class DatabaseUnavailableError(ServiceUnavailableError):
    """PostgreSQL did not give a connection within the configured wait
    (`LGOS_POSTGRES_WAIT_SECONDS`): it restarted or is down."""

    def __init__(self) -> None:
        super().__init__(
            "The database is unavailable; try again shortly.", code="database_unavailable"
        )


class EngineUnavailableError(ServiceUnavailableError):
    """The background engine (or the database it keeps its runs in) is unreachable."""

    def __init__(self, engine: str) -> None:
        super().__init__(
            f"The background engine ({engine}) is unavailable; try again shortly.",
            code="engine_unavailable",
        )
        self.engine = engine


class GraphError(RuntimeError):
    """A graph is misconfigured or produced output that cannot be served (a server bug, 500)."""


class ConfigurationError(ValueError):
    """The registry or server settings are invalid; raised at start-up, never per request."""


def is_transient_database_error(error: BaseException) -> bool:
    """Whether `error` (or what caused it) is a lost or unavailable database connection: the
    database restarted or blipped, and the same work may succeed once it is back.

    Read from the loaded modules, so the core never imports the PostgreSQL extra.
    """
    psycopg = sys.modules.get("psycopg")
    pool = sys.modules.get("psycopg_pool")
    kinds: tuple[type[BaseException], ...] = ()
    if psycopg is not None:
        kinds += (psycopg.OperationalError,)
    if pool is not None:
        kinds += (pool.PoolTimeout,)
    sqlalchemy = sys.modules.get("sqlalchemy.exc")
    if sqlalchemy is not None:
        # DBOS's client: its engine's checkout timed out (a lost connection is psycopg's
        # OperationalError, which SQLAlchemy's wraps as the cause).
        kinds += (sqlalchemy.TimeoutError,)
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if kinds and isinstance(current, kinds):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False
