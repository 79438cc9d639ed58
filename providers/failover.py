"""Failover within one attempt: each provider that fails hands the message to the next."""

from __future__ import annotations

from dataclasses import dataclass, field

from providers.base import Credentials, EmailProvider, OutgoingEmail, ProviderError, SendResult


@dataclass(frozen=True)
class Route:
    provider: EmailProvider
    credentials: Credentials


@dataclass
class FailoverResult:
    sent: SendResult | None = None
    errors: list[ProviderError] = field(default_factory=list)

    @property
    def last_tried(self) -> str | None:
        if self.sent:
            return self.sent.provider
        return self.errors[-1].provider if self.errors else None

    @property
    def error_message(self) -> str:
        return "; ".join(str(error) for error in self.errors)


def send_with_failover(email: OutgoingEmail, routes: list[Route]) -> FailoverResult:
    result = FailoverResult()
    for route in routes:
        try:
            result.sent = route.provider.send(email, route.credentials)
        except ProviderError as error:
            result.errors.append(error)
        else:
            return result
    return result
