"""The domain's errors: what services and selectors raise when a rule refuses.

Each carries the message its reader sees, word for word (docs/rules.md lists them). They
know nothing of HTTP: the API's exception handler (core.api.exceptions) gives each class its
status code in one table, a dashboard view shows the message on its form, and the worker
turns one into a delivery outcome.
"""

from __future__ import annotations


class DomainError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidRequest(DomainError):
    """The request breaks a rule whatever the account's standing (a bad value, a routing mistake)."""


class SenderNotAllowed(InvalidRequest):
    """The requested ``from`` address is not one the account may send from."""


class NotPermitted(DomainError):
    """The account may not do this: its plan, its state, or what it has not set up yet."""


class SendingNotReady(NotPermitted):
    """A paid account's email cannot go out yet: no provider key, or no verified sending domain."""


class QuotaExceeded(NotPermitted):
    """The billing period's notifications are used up."""


class NotFound(DomainError):
    """No such thing for this account; another account's things are not found either."""


class Conflict(DomainError):
    """The request clashes with what already exists."""


class DuplicateRequest(Conflict):
    """A job with the same idempotency key exists."""


class UpstreamFailed(DomainError):
    """A provider NotifyHub relies on refused or could not be reached."""
