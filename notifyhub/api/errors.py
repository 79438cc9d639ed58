from __future__ import annotations

from rest_framework.exceptions import APIException


class ApiError(APIException):
    """The one application error: an HTTP status and the message the client reads.

    Services raise it; the exception handler renders it in the spec's envelope.
    """

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(detail=message)
        self.status_code = status_code
        self.message = message
