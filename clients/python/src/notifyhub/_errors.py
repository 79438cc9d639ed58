"""The errors the client raises: one class per family of the API's refusals, each carrying the answer's HTTP
``status``, its stable ``code`` and its ``message`` (NotifyHub's docs/errors.md lists every code). Branch on ``code``;
show or log ``message``."""

from __future__ import annotations

from ._models import Job


class NotifyHubError(Exception):
    """Every error the client raises. ``status`` and ``code`` are None when no answer of NotifyHub's came."""

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code


class APIConnectionError(NotifyHubError):
    """No answer: the connection failed, or broke before the answer came."""


class APITimeoutError(APIConnectionError):
    """No answer within the client's ``timeout``."""


class ValidationError(NotifyHubError):
    """400: a field breaks its rule, the body holds a field the API does not know, or the request is malformed."""


class AuthenticationError(NotifyHubError):
    """401: the API key is missing, malformed, unknown or revoked."""


class PermissionDeniedError(NotifyHubError):
    """403: the key's scope, the plan, the quota or an inactive account refuses the request."""


class NotFoundError(NotifyHubError):
    """404: no such job, suppression, event endpoint or domain of the account's."""


class ConflictError(NotifyHubError):
    """409: the idempotency key was used already, or the thing exists already."""


class RateLimitError(NotifyHubError):
    """429: the key's rolling minute is used up."""


class ServiceUnavailableError(NotifyHubError):
    """503: NotifyHub's database or Redis cannot be reached for a moment."""


class WaitTimeoutError(NotifyHubError):
    """``jobs.wait`` ran out of time; ``job`` is the job as last read."""

    def __init__(self, job: Job, timeout: float) -> None:
        super().__init__(f"Job {job.id} is still {job.status} after {timeout:g} s")
        self.job = job


class WebhookVerificationError(NotifyHubError):
    """A delivery that NotifyHub did not sign with this secret, that was altered, or that is too old."""


ERROR_BY_STATUS: dict[int, type[NotifyHubError]] = {
    400: ValidationError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    429: RateLimitError,
    503: ServiceUnavailableError,
}
