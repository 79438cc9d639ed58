"""An attempt's outcome into the call's result or the error it stands for. Every answer is NotifyHub's envelope:
``{"success": true, "data": ...}`` or ``{"success": false, "error": <message>, "code": <code>}`` (docs/errors.md)."""

from __future__ import annotations

import json
from typing import Any, TypeVar

import httpx

from ._calls import Call
from ._errors import ERROR_BY_STATUS, APIConnectionError, APITimeoutError, NotifyHubError
from ._retry import Outcome

T = TypeVar("T")


def result(call: Call[T], outcome: Outcome) -> T:
    """The call's result from its last outcome, or the error that outcome is."""
    if isinstance(outcome, httpx.TransportError):
        raise _connection_error(outcome) from outcome
    envelope = _envelope(outcome)
    if outcome.is_success and "data" in envelope:
        return call.read(envelope["data"])
    if outcome.is_success:
        raise NotifyHubError("The answer has no data", status=outcome.status_code)
    raise _refusal(outcome, envelope)


def _connection_error(error: httpx.TransportError) -> APIConnectionError:
    kind = APITimeoutError if isinstance(error, httpx.TimeoutException) else APIConnectionError
    return kind(f"No answer from NotifyHub: {error!r}")


def _envelope(response: httpx.Response) -> dict[str, Any]:
    """The answer's envelope; empty when the answer is not one (a proxy's page, say)."""
    try:
        envelope = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return {}
    return envelope if isinstance(envelope, dict) else {}


def _refusal(response: httpx.Response, envelope: dict[str, Any]) -> NotifyHubError:
    status = response.status_code
    message = envelope.get("error") or f"{status} {response.reason_phrase}"
    return ERROR_BY_STATUS.get(status, NotifyHubError)(str(message), status=status, code=envelope.get("code"))
