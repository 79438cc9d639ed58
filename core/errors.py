"""The domain's errors: what services and selectors raise when a rule refuses.

Each condition is a small class carrying its stable ``code`` and the message its reader sees, word for
word, side by side (docs/errors.md lists them): a raise site names the condition, and the message's parts,
where it has any, are its typed keyword arguments. The classes know nothing of HTTP: the API's exception
handler (core.api.exceptions) gives each family its status code in one table, a dashboard view shows the
message on its form, and the worker turns one into a delivery outcome.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar


class CodedError(Exception):
    """An error a client is told of: ``code`` names the condition for programs, ``message`` says it to people.

    A condition is a subclass that sets ``code``, never reused and never given another meaning; its message is a
    class attribute, or is built by its ``__init__`` from what it names. A subclass that keeps its parent's code
    is the same condition in other words.
    """

    code: ClassVar[str]
    message: str

    def __init__(self) -> None:
        super().__init__(self.message)


class DomainError(CodedError):
    """A rule of the domain refused; the families below are what the API's status table maps."""


# --- 400: the request breaks a rule whatever the account's standing ----------------------------------------


class InvalidRequest(DomainError):
    """The request breaks a rule whatever the account's standing (a bad value, a routing mistake)."""


class ProviderNotConfigured(InvalidRequest):
    code = "provider_not_configured"

    def __init__(self, *, provider: str) -> None:
        self.message = f"Provider {provider} is not configured for this customer"
        super().__init__()


class FallbackNotConfigured(InvalidRequest):
    code = "fallback_not_configured"

    def __init__(self, *, provider: str) -> None:
        self.message = f"Fallback provider {provider} is not configured for this customer"
        super().__init__()


class SenderNotAllowed(InvalidRequest):
    """The requested ``from`` address is not one the account may send from."""


class PlatformSenderOnly(SenderNotAllowed):
    """A Free account sends from the platform's address only."""

    code = "platform_sender_only"

    def __init__(self, *, sender: str, platform_sender: str) -> None:
        self.message = f"Cannot send from {sender}. Only {platform_sender} is allowed."
        super().__init__()


class SenderOutsideDomain(SenderNotAllowed):
    """A paid account sends from its verified domain only."""

    code = "sender_outside_domain"

    def __init__(self, *, sender: str, domain: str) -> None:
        self.message = f"Cannot send from {sender}. Use your verified domain {domain} instead."
        super().__init__()


PROVIDER_KEY_MESSAGE = (
    "Please add at least one email provider API key (SendGrid, Resend, or Postmark) in Settings before sending emails."
)


class RetryNeedsProviderKey(InvalidRequest):
    """A paid account's failed email without a provider key could only fail again."""

    code = "retry_needs_provider_key"
    message = PROVIDER_KEY_MESSAGE


class UrlNotPublic(InvalidRequest):
    code = "url_not_public"
    message = "url must not point to a local or private network address"


class MonthlyLimitInvalid(InvalidRequest):
    code = "monthly_limit_invalid"
    message = "A monthly limit must be a whole number, 1 or more."


class RateLimitInvalid(InvalidRequest):
    code = "rate_limit_invalid"
    message = "A rate limit must be a whole number of requests a minute, from 1 to 1,000,000."


class ApiKeyNameInvalid(InvalidRequest):
    code = "api_key_name_invalid"
    message = "An API key's name must be 1 to 64 characters on one line."


class ProviderCredentialRefused(InvalidRequest):
    """The provider said no to a key or token the holder gave; nothing was saved."""

    code = "provider_credential_refused"

    def __init__(self, *, provider: str, credential: str, reason: str) -> None:
        self.message = f"{provider} refused this {credential} ({reason}). Nothing was saved."
        super().__init__()


class DomainNeedsProviderKey(InvalidRequest):
    code = "domain_needs_provider_key"
    message = "Add at least one provider API key before adding a sending domain."


class NoProviderCanRegister(InvalidRequest):
    """Every provider key the account has lacks what domain calls need."""

    code = "no_provider_can_register"

    def __init__(self, *, reasons: Sequence[str]) -> None:
        self.message = "No provider can register the domain: " + "; ".join(reasons)
        super().__init__()


class SendGridKeyInvalid(InvalidRequest):
    code = "sendgrid_key_invalid"
    message = "The SendGrid verification key must be the base64 public key SendGrid shows"


class ResendSecretInvalid(InvalidRequest):
    code = "resend_secret_invalid"
    message = "The Resend signing secret must be the whsec_... secret Resend shows"


class TrackingCredentialNotSettable(InvalidRequest):
    code = "tracking_credential_not_settable"

    def __init__(self, *, provider: str) -> None:
        self.message = f"{provider} has no key or secret to set; Postmark's password is generated"
        super().__init__()


# Templates (docs/templates.md): what a template's save, render or send refuses.


class TemplateSyntaxInvalid(InvalidRequest):
    """A part of a template being saved is not Liquid that parses; names the part and the line."""

    code = "template_syntax_error"

    def __init__(self, *, part: str, line: int, reason: str) -> None:
        self.message = f"{part} has a syntax error on line {line}: {reason}"
        super().__init__()


class TemplateDataMissing(InvalidRequest):
    """A variable the template outputs without a `default` filter is not in `data`."""

    code = "template_data_missing"

    def __init__(self, *, name: str, alias: str) -> None:
        self.message = f"data is missing {name} for template {alias}"
        super().__init__()


class TemplateNotRendered(InvalidRequest):
    """Rendering failed otherwise: a resource limit reached, a filter given what it cannot take."""

    code = "template_render_failed"

    def __init__(self, *, alias: str, reason: str) -> None:
        self.message = f"Template {alias} could not be rendered: {reason}"
        super().__init__()


class SendTemplateNotFound(InvalidRequest):
    """A send names a template the account does not have (any more): the body's mistake, so a 400."""

    code = "send_template_not_found"

    def __init__(self, *, template: str) -> None:
        self.message = f"Template {template} not found"
        super().__init__()


class SendTemplateVersionNotFound(InvalidRequest):
    """A send pins a version its template does not have."""

    code = "send_template_version_not_found"

    def __init__(self, *, alias: str, version: int) -> None:
        self.message = f"Template {alias} has no version {version}"
        super().__init__()


# --- 403: the account may not do this ---------------------------------------------------------------------


class NotPermitted(DomainError):
    """The account may not do this: its plan, its state, or what it has not set up yet."""


class AccountInactive(NotPermitted):
    """Inactive and soft-deleted accounts are refused, however they authenticate."""

    code = "account_inactive"
    message = "Account is inactive"


class AccountMissing(NotPermitted):
    """A signed-in user with no NotifyHub account (staff, say)."""

    code = "account_missing"
    message = "This user has no NotifyHub account"


class EmailUnconfirmed(NotPermitted):
    """Until the holder confirms the address, nothing is kept that would outlive a sign-up started over."""

    code = "email_unconfirmed"
    message = (
        "Confirm your email address first: follow the link we emailed you. Until then this account keeps no settings."
    )


class EmailUnconfirmedForKey(EmailUnconfirmed):
    """The same, said where an API key was asked for."""

    message = "Confirm your email address first: follow the link we emailed you, then create a key."


class EmailUnconfirmedForTest(EmailUnconfirmed):
    """The same, said where a test email to the holder's own address was asked for: an unconfirmed address may be
    someone else's."""

    message = "Confirm your email address first: follow the link we emailed you, then send a test."


class PaidPlanRequired(NotPermitted):
    """The account's plan does not include this."""


class RoutingNeedsPaidPlan(PaidPlanRequired):
    code = "routing_requires_paid_plan"
    message = "Per-message provider routing requires a paid plan"


class PriorityNeedsPaidPlan(PaidPlanRequired):
    code = "priority_requires_paid_plan"
    message = "Priority requires a paid plan"


class DomainsNeedPaidPlan(PaidPlanRequired):
    code = "domains_require_paid_plan"
    message = "Custom sender domains require a paid plan"


class ProviderKeysNeedPaidPlan(PaidPlanRequired):
    code = "provider_keys_require_paid_plan"
    message = (
        "Provider keys are for paid plans (Indie and Startup). On the Free plan NotifyHub's own providers send your "
        "email."
    )


class SendingNotReady(NotPermitted):
    """A paid account's email cannot go out yet: no provider key, or no verified sending domain."""


class ProviderKeyRequired(SendingNotReady):
    code = "provider_key_required"
    message = PROVIDER_KEY_MESSAGE


class SendingDomainRequired(SendingNotReady):
    code = "sending_domain_required"
    message = "Paid plans must use a verified sending domain. Please add and verify your domain in Settings."


class SendingDomainPending(SendingNotReady):
    code = "sending_domain_pending"
    message = "Your sending domain is pending verification. Please complete domain verification in Settings."


class QuotaExceeded(NotPermitted):
    """The billing period's notifications are used up."""

    code = "quota_exceeded"

    def __init__(self, *, used: int, limit: int, resets_on: str) -> None:
        self.message = (
            f"Monthly usage limit exceeded ({used}/{limit}). Upgrade your plan or wait for reset on {resets_on}."
        )
        super().__init__()


# --- 404: no such thing for this account ------------------------------------------------------------------


class NotFound(DomainError):
    """No such thing for this account; another account's things are not found either."""


class JobNotFound(NotFound):
    code = "job_not_found"
    message = "Job not found"


class JobNotRetryable(NotFound):
    """Missing, another account's, or not failed: Retry Job tells none of them apart."""

    code = "job_not_retryable"
    message = "Job not found or cannot be retried (must be in failed status)"


class JobNotCancellable(NotFound):
    """Missing, another account's, or not pending (claimed, finished): Cancel Job tells none of them apart."""

    code = "job_not_cancellable"
    message = "Job not found or cannot be cancelled (must be pending)"


class DomainNotFound(NotFound):
    code = "domain_not_found"
    message = "No sender domain. Request one first."


class ProviderKeyNotFound(NotFound):
    code = "provider_key_not_found"

    def __init__(self, *, provider: str) -> None:
        self.message = f"There is no {provider} key to move."
        super().__init__()


class ApiKeyNotFound(NotFound):
    code = "api_key_not_found"

    def __init__(self, *, name: str) -> None:
        self.message = f"There is no active API key named {name}."
        super().__init__()


class SuppressionNotFound(NotFound):
    code = "suppression_not_found"
    message = "Suppression not found"


class EventEndpointNotFound(NotFound):
    code = "event_endpoint_not_found"
    message = "Event endpoint not found"


class UserNotFound(NotFound):
    """No user with this id, or a user without a NotifyHub account (staff's endpoints)."""

    code = "user_not_found"
    message = "User not found"


class TemplateNotFound(NotFound):
    code = "template_not_found"

    def __init__(self, *, template: str) -> None:
        self.message = f"Template {template} not found"
        super().__init__()


class AppNotFound(NotFound):
    code = "app_not_found"

    def __init__(self, *, app: str) -> None:
        self.message = f"App {app} not found"
        super().__init__()


class EndpointNotFound(NotFound):
    """No endpoint of this id in the app: another app's or another account's answers the same."""

    code = "endpoint_not_found"
    message = "Endpoint not found"


class MessageNotFound(NotFound):
    """A message that is not the app's, or not of the caller's mode (docs/customer-webhooks.md, "Messages")."""

    code = "message_not_found"
    message = "Message not found"


class TemplateVersionNotFound(NotFound):
    code = "template_version_not_found"

    def __init__(self, *, alias: str, version: int) -> None:
        self.message = f"Template {alias} has no version {version}"
        super().__init__()


# --- 409: the request clashes with what exists ------------------------------------------------------------


class Conflict(DomainError):
    """The request clashes with what already exists."""


class DuplicateRequest(Conflict):
    """A job with the same idempotency key exists."""

    code = "duplicate_request"
    message = "Duplicate request detected"


class DomainExists(Conflict):
    """The account has its one sender domain already."""

    code = "domain_exists"

    def __init__(self, *, name: str | None) -> None:
        # None: a concurrent request added it first, and is known only by the insert it made fail.
        which = f"the sender domain {name}" if name else "a sender domain"
        self.message = f"Your account already has {which}. Delete it first."
        super().__init__()


class EmailTaken(Conflict):
    code = "email_taken"
    message = "An account with this email already exists. Sign in instead."


class EventEndpointLimit(Conflict):
    """The account has as many event endpoints as it may (event_endpoints.models.ENDPOINTS_PER_ACCOUNT)."""

    code = "event_endpoint_limit"
    message = "An account may have at most 5 event endpoints. Delete one first."


class ApiKeyLimit(Conflict):
    """The account has as many active API keys as it may (accounts.models.MAX_ACTIVE_API_KEYS)."""

    code = "api_key_limit"
    message = "An account may have at most 10 active API keys. Revoke one first."


class ApiKeyNameTaken(Conflict):
    code = "api_key_name_taken"

    def __init__(self, *, name: str) -> None:
        self.message = f"An active API key is named {name} already."
        super().__init__()


class AddressSuppressed(Conflict):
    """The address is on the account's suppression list already, added by hand or by a provider's event."""

    code = "address_suppressed"
    message = "Address is already suppressed"


class AccountNotDeleted(Conflict):
    code = "account_not_deleted"
    message = "This account is not deleted"


class TemplateLimit(Conflict):
    """The account has as many templates as it may (email_templates.models.TEMPLATES_PER_ACCOUNT)."""

    code = "template_limit"
    message = "An account may have at most 100 templates. Delete one first."


class TemplateAliasTaken(Conflict):
    code = "template_alias_taken"

    def __init__(self, *, alias: str) -> None:
        self.message = f"A template with alias {alias} exists already"
        super().__init__()


class AppUidTaken(Conflict):
    code = "app_uid_taken"

    def __init__(self, *, uid: str) -> None:
        self.message = f"An app with uid {uid} exists already"
        super().__init__()


class EndpointLimit(Conflict):
    """The app has as many endpoints as it may (customer_webhooks.models.ENDPOINTS_PER_APP)."""

    code = "endpoint_limit"
    message = "An app may have at most 20 endpoints. Delete one first."


# --- 502: a provider NotifyHub relies on failed -----------------------------------------------------------


class UpstreamFailed(DomainError):
    """A provider NotifyHub relies on refused or could not be reached."""


class EmailNotSent(UpstreamFailed):
    """NotifyHub's own email (a confirmation link, a password reset) did not go out."""

    code = "email_not_sent"

    def __init__(self, *, reason: str) -> None:
        self.message = f"The email could not be sent: {reason}"
        super().__init__()


class DomainRegistrationFailed(UpstreamFailed):
    """A provider refused the domain; the registrations made before it were removed."""

    code = "domain_registration_failed"

    def __init__(self, *, sending_name: str, error: str) -> None:
        self.message = f"Could not register {sending_name} with {error}"
        super().__init__()


class ProviderUnreachable(UpstreamFailed):
    """The provider could not be asked about a key, so the key was not saved."""

    code = "provider_unreachable"

    def __init__(self, *, provider: str, reason: str) -> None:
        self.message = f"{provider} could not be reached ({reason}), so the key was not checked and not saved."
        super().__init__()


class ProviderKeyUnchecked(UpstreamFailed):
    """The provider answered, but with an error instead of a verdict on the key, so the key was not saved."""

    code = "provider_key_unchecked"

    def __init__(self, *, provider: str, reason: str, transient: bool) -> None:
        retry = " Try again in a moment." if transient else ""
        self.message = f"{provider} could not check the key ({reason}), so it was not saved.{retry}"
        super().__init__()
