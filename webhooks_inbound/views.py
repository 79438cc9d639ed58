"""The providers' event webhooks: ``POST /api/v1/webhooks/<provider>/<customerId>``.

Each receiver is django-anymail's tracking webhook view for its provider: anymail's parser
reads the payload and, for SendGrid and Resend, anymail's own check verifies the signature.
The one site-wide credential anymail would read from settings comes instead from the account
the URL names, set on the view before the checks run (docs/inbound-events.md).
"""

from __future__ import annotations

from typing import Any, ClassVar

from anymail.exceptions import AnymailConfigurationError, AnymailWebhookValidationFailure
from anymail.utils import get_request_basic_auth
from anymail.webhooks.base import AnymailCoreWebhookView
from anymail.webhooks.postmark import PostmarkTrackingWebhookView
from anymail.webhooks.resend import ResendTrackingWebhookView
from anymail.webhooks.sendgrid import SendGridTrackingWebhookView
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.crypto import constant_time_compare

from accounts.models import Account
from core.api.envelope import error_response, success_response
from core.crypto import decrypt
from providers.names import ProviderName
from webhooks_inbound.events import ReportedEvent, reported_event
from webhooks_inbound.models import TrackingCredentials
from webhooks_inbound.selectors import receiving_account
from webhooks_inbound.services import events_record, postmark_password_digest
from webhooks_inbound.verification import SIGNATURE_TOLERANCE_SECONDS, is_fresh, resend_verifier, sendgrid_public_key

# anymail's parsers index the provider's JSON as the provider documents it; a body of any
# other shape surfaces as one of these, and is the sender's mistake, not ours.
MALFORMED_PAYLOAD = (ValueError, KeyError, TypeError, AttributeError, OverflowError, AnymailConfigurationError)
BASIC_CHALLENGE = 'Basic realm="NotifyHub provider events"'
STALE_SIGNATURE = f"The signature timestamp is missing or more than {SIGNATURE_TOLERANCE_SECONDS // 60} minutes old"


class Refused(Exception):
    """The request is answered with this error and nothing is stored."""

    def __init__(self, status: int, message: str, *, challenge: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.challenge = challenge

    def response(self) -> HttpResponse:
        response = error_response(self.status, self.message)
        if self.challenge:
            response["WWW-Authenticate"] = self.challenge
        return response


class EventReceiver(AnymailCoreWebhookView):
    provider: ClassVar[ProviderName]
    # Sent back on a 401, so the sender learns how to authenticate.
    challenge: ClassVar[str | None] = None

    def __init__(self, **kwargs: Any) -> None:
        # anymail's mixins read one credential from settings at construction and warn when it is
        # absent; here the credentials are the account's, given by use_credentials per request.
        AnymailCoreWebhookView.__init__(self, **kwargs)

    def post(self, request: HttpRequest, customer_id: str) -> HttpResponse:
        try:
            request.body  # noqa: B018  # read once here, so an oversized body is refused as such
            account = self.authenticated_account(request, customer_id)
            events, ignored = self.reported_events(request)
        except RequestDataTooBig:
            return error_response(413, "Request body is too large")
        except Refused as refusal:
            return refusal.response()
        recorded = events_record(account=account, provider=self.provider, events=events, ignored=ignored)
        return success_response(recorded.as_dict())

    def http_method_not_allowed(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = error_response(405, f'Method "{request.method}" not allowed.')
        response["Allow"] = ", ".join(method.upper() for method in self._allowed_methods())
        return response

    def authenticated_account(self, request: HttpRequest, customer_id: str) -> Account:
        found = receiving_account(customer_id=customer_id)
        if found is None:
            raise Refused(404, "Unknown customerId")
        account, credentials = found
        if not self.use_credentials(credentials):
            raise Refused(
                401, f"{self.provider.label} events are not set up for this account", challenge=self.challenge
            )
        try:
            self.run_validators(request)
        # The Svix verifier raises ValueError, not its own error, for a signature header it cannot split or decode.
        except (AnymailWebhookValidationFailure, ValueError):
            raise Refused(401, f"Invalid {self.provider.label} signature", challenge=self.challenge) from None
        return account

    def reported_events(self, request: HttpRequest) -> tuple[list[ReportedEvent], int]:
        """The events NotifyHub tracks, and how many others the body held."""
        received_at = timezone.now()
        try:
            reported = [
                reported_event(self.provider, event, received_at=received_at) for event in self.parse_events(request)
            ]
        except MALFORMED_PAYLOAD:
            raise Refused(400, f"The body is not a {self.provider.label} event payload") from None
        events = [event for event in reported if event is not None]
        return events, len(reported) - len(events)

    def use_credentials(self, credentials: TrackingCredentials | None) -> bool:
        """Arms the checks with the account's credential; False when the account has none for this provider."""
        raise NotImplementedError


class PostmarkEventReceiver(EventReceiver, PostmarkTrackingWebhookView):
    """Postmark signs nothing: its webhook URL carries a Basic Auth password NotifyHub generated."""

    provider = ProviderName.POSTMARK
    challenge = BASIC_CHALLENGE
    password_digest = ""

    def use_credentials(self, credentials: TrackingCredentials | None) -> bool:
        self.password_digest = credentials.postmark_password_digest if credentials else ""
        return bool(self.password_digest)

    def validate_request(self, request: HttpRequest) -> None:
        # Any user name: the customer types both into Postmark, and only the password is secret.
        _, _, password = (get_request_basic_auth(request) or "").partition(":")
        if not constant_time_compare(postmark_password_digest(password), self.password_digest):
            raise Refused(401, "Invalid Basic Auth credentials", challenge=self.challenge)


class SendGridEventReceiver(EventReceiver, SendGridTrackingWebhookView):
    """SendGrid signs timestamp + body with ECDSA P-256; anymail's check verifies with the account's key."""

    provider = ProviderName.SENDGRID

    def use_credentials(self, credentials: TrackingCredentials | None) -> bool:
        key = credentials.sendgrid_verification_key if credentials else ""
        self.webhook_verification_key = sendgrid_public_key(key) if key else None
        return self.webhook_verification_key is not None

    def validate_request(self, request: HttpRequest) -> None:
        if not is_fresh(request.headers.get("X-Twilio-Email-Event-Webhook-Timestamp")):
            raise Refused(401, STALE_SIGNATURE)


class ResendEventReceiver(EventReceiver, ResendTrackingWebhookView):
    """Resend signs through Svix; anymail's check verifies with the account's ``whsec_`` secret."""

    provider = ProviderName.RESEND

    def use_credentials(self, credentials: TrackingCredentials | None) -> bool:
        encrypted = credentials.encrypted_resend_secret if credentials else ""
        # The verifier anymail's Svix check reads (anymail.webhooks.resend.SvixWebhookValidationMixin).
        self._svix_webhook = resend_verifier(decrypt(encrypted)) if encrypted else None
        return self._svix_webhook is not None

    def validate_request(self, request: HttpRequest) -> None:
        if not is_fresh(request.headers.get("svix-timestamp")):
            raise Refused(401, STALE_SIGNATURE)


RECEIVERS: dict[str, type[EventReceiver]] = {
    ProviderName.POSTMARK: PostmarkEventReceiver,
    ProviderName.SENDGRID: SendGridEventReceiver,
    ProviderName.RESEND: ResendEventReceiver,
}
