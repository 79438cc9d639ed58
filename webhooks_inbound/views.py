"""The providers' event webhooks: ``POST /api/v1/webhooks/<provider>/<customerId>``.

Each receiver is django-anymail's tracking webhook view for its provider: anymail's parser
reads the payload and, for SendGrid and Resend, anymail's own check verifies the signature.
The one site-wide credential anymail would read from settings comes instead from the account
the URL names, set on the view before the checks run (docs/inbound-events.md).
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from anymail.exceptions import AnymailConfigurationError, AnymailWebhookValidationFailure
from anymail.signals import AnymailTrackingEvent
from anymail.utils import get_request_basic_auth
from anymail.webhooks.base import AnymailCoreWebhookView
from anymail.webhooks.postmark import PostmarkTrackingWebhookView
from anymail.webhooks.resend import ResendTrackingWebhookView
from anymail.webhooks.sendgrid import SendGridTrackingWebhookView
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.crypto import constant_time_compare

from accounts.models import Account
from accounts.throttle import per_minute_hit
from core.api.envelope import success_response
from core.api.exceptions import ApiError, MethodNotAllowed, PayloadTooLarge, RateLimited
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

# The caps below are above what each provider sends and bound what one request costs (docs/inbound-events.md).
# SendGrid posts a batch "within approximately 30 seconds or when the batch size reaches 768 kilobytes"
# (https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/twilio-sendgrid-event-webhook-overview#data-storage):
# 1 MiB leaves room for the event that crosses that size. Resend posts one event of a few KB.
MAX_BODY_BYTES = 1024 * 1024
# Postmark posts one event, but a bounce carries the bounced message's dump when the webhook includes bounce content
# (https://postmarkapp.com/developer/webhooks/bounce-webhook), so it keeps the 2.5 MB Django allows any request.
POSTMARK_MAX_BODY_BYTES = 2_621_440
# A real SendGrid event takes 150 bytes or more (address, time, type and two ids at the least), so 1 MiB of them
# is fewer than 7,000: only a batch of stubs reaches this, and each event is parsed, mapped and looked up.
SENDGRID_MAX_EVENTS = 10_000


class CustomerNotFound(ApiError):
    """The URL's customerId is not a UUID, names no account, or names a deleted one."""

    status = 404
    code = "customer_not_found"
    message = "Unknown customerId"


class EventsNotSetUp(ApiError):
    """The account has no credential for this provider's events."""

    status = 401
    code = "events_not_set_up"

    def __init__(self, *, provider: ProviderName) -> None:
        self.message = f"{provider.label} events are not set up for this account"
        super().__init__()


class BasicAuthInvalid(ApiError):
    status = 401
    code = "basic_auth_invalid"
    message = "Invalid Basic Auth credentials"


class SignatureStale(ApiError):
    """A captured request cannot be replayed later, and a clock far ahead is not trusted either."""

    status = 401
    code = "signature_stale"
    message = f"The signature timestamp is missing or more than {SIGNATURE_TOLERANCE_SECONDS // 60} minutes old"


class SignatureInvalid(ApiError):
    status = 401
    code = "signature_invalid"

    def __init__(self, *, provider: ProviderName) -> None:
        self.message = f"Invalid {provider.label} signature"
        super().__init__()


class BatchTooLarge(ApiError):
    status = 413
    code = "batch_too_large"
    message = f"A batch must hold at most {SENDGRID_MAX_EVENTS} events"


class EventPayloadInvalid(ApiError):
    """The authenticated body is not what the provider sends."""

    status = 400
    code = "event_payload_invalid"

    def __init__(self, *, provider: ProviderName) -> None:
        self.message = f"The body is not a {provider.label} event payload"
        super().__init__()


class EventReceiver(AnymailCoreWebhookView):
    provider: ClassVar[ProviderName]
    # Sent back on a 401, so the sender learns how to authenticate.
    challenge: ClassVar[str | None] = None
    max_body_bytes: ClassVar[int] = MAX_BODY_BYTES

    def __init__(self, **kwargs: Any) -> None:
        # anymail's mixins read one credential from settings at construction and warn when it is
        # absent; here the credentials are the account's, given by use_credentials per request.
        AnymailCoreWebhookView.__init__(self, **kwargs)

    def post(self, request: HttpRequest, customer_id: str) -> HttpResponse:
        try:
            self.refuse_oversized(request)
            account = self.authenticated_account(request, customer_id)
            refuse_over_rate(account)
            events, ignored = self.reported_events(request)
        except ApiError as refusal:
            return self.refused(refusal)
        recorded = events_record(account=account, provider=self.provider, events=events, ignored=ignored)
        return success_response(recorded.as_dict())

    def refused(self, refusal: ApiError) -> HttpResponse:
        """The refusal answered, nothing stored; a 401 carries the receiver's challenge, if it has one."""
        response = refusal.response()
        if refusal.status == 401 and self.challenge:
            response["WWW-Authenticate"] = self.challenge
        return response

    def http_method_not_allowed(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = MethodNotAllowed(method=str(request.method)).response()
        response["Allow"] = ", ".join(method.upper() for method in self._allowed_methods())
        return response

    def refuse_oversized(self, request: HttpRequest) -> None:
        """413 on the length the request declares, before any of the body is read.

        Django reads no further than Content-Length (and nothing without it), so a body that
        passes here is read capped at this size.
        """
        if int(request.META.get("CONTENT_LENGTH") or 0) > self.max_body_bytes:
            raise PayloadTooLarge(limit_bytes=self.max_body_bytes)

    def authenticated_account(self, request: HttpRequest, customer_id: str) -> Account:
        found = receiving_account(customer_id=customer_id)
        if found is None:
            raise CustomerNotFound()
        account, credentials = found
        if not self.use_credentials(credentials):
            raise EventsNotSetUp(provider=self.provider)
        try:
            self.run_validators(request)
        # The Svix verifier raises ValueError, not its own error, for a signature header it cannot split or decode.
        except (AnymailWebhookValidationFailure, ValueError):
            raise SignatureInvalid(provider=self.provider) from None
        return account

    def reported_events(self, request: HttpRequest) -> tuple[list[ReportedEvent], int]:
        """The events NotifyHub tracks, and how many others the body held."""
        received_at = timezone.now()
        try:
            reported = [
                reported_event(self.provider, event, received_at=received_at) for event in self.parse_events(request)
            ]
        except MALFORMED_PAYLOAD:
            raise EventPayloadInvalid(provider=self.provider) from None
        events = [event for event in reported if event is not None]
        return events, len(reported) - len(events)

    def use_credentials(self, credentials: TrackingCredentials | None) -> bool:
        """Arms the checks with the account's credential; False when the account has none for this provider."""
        raise NotImplementedError


def refuse_over_rate(account: Account) -> None:
    """429 once the account's receivers answered PROVIDER_EVENTS_PER_MINUTE requests in the last minute.

    Counted after authentication, though a refusal before it would cost less: the customerId is
    no secret (it is in the URL set at the provider), so a count before it would let anyone who
    knows one use up the account's minute and have its genuine events refused. What a request
    costs until then is bounded: its declared size, one indexed lookup, one signature check.
    """
    limit: int = settings.PROVIDER_EVENTS_PER_MINUTE
    if not per_minute_hit(scope="provider-events", key=str(account.public_id), limit=limit):
        raise RateLimited()


class PostmarkEventReceiver(EventReceiver, PostmarkTrackingWebhookView):
    """Postmark signs nothing: its webhook URL carries a Basic Auth password NotifyHub generated."""

    provider = ProviderName.POSTMARK
    challenge = BASIC_CHALLENGE
    max_body_bytes = POSTMARK_MAX_BODY_BYTES
    password_digest = ""

    def use_credentials(self, credentials: TrackingCredentials | None) -> bool:
        self.password_digest = credentials.postmark_password_digest if credentials else ""
        return bool(self.password_digest)

    def validate_request(self, request: HttpRequest) -> None:
        # Any user name: the customer types both into Postmark, and only the password is secret.
        _, _, password = (get_request_basic_auth(request) or "").partition(":")
        if not constant_time_compare(postmark_password_digest(password), self.password_digest):
            raise BasicAuthInvalid()


class SendGridEventReceiver(EventReceiver, SendGridTrackingWebhookView):
    """SendGrid signs timestamp + body with ECDSA P-256; anymail's check verifies with the account's key."""

    provider = ProviderName.SENDGRID

    def use_credentials(self, credentials: TrackingCredentials | None) -> bool:
        key = credentials.sendgrid_verification_key if credentials else ""
        self.webhook_verification_key = sendgrid_public_key(key) if key else None
        return self.webhook_verification_key is not None

    def validate_request(self, request: HttpRequest) -> None:
        if not is_fresh(request.headers.get("X-Twilio-Email-Event-Webhook-Timestamp")):
            raise SignatureStale()

    def parse_events(self, request: HttpRequest) -> list[AnymailTrackingEvent]:
        """anymail's own two steps, with the batch counted between them: before any event is read."""
        batch = json.loads(request.body.decode("utf-8"))
        if isinstance(batch, list) and len(batch) > SENDGRID_MAX_EVENTS:
            raise BatchTooLarge()
        return [self.esp_to_anymail_event(event) for event in batch]


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
            raise SignatureStale()


RECEIVERS: dict[str, type[EventReceiver]] = {
    ProviderName.POSTMARK: PostmarkEventReceiver,
    ProviderName.SENDGRID: SendGridEventReceiver,
    ProviderName.RESEND: ResendEventReceiver,
}
