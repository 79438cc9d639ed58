"""The dashboard's forms: each field labelled as the page shows it, each refusal in words."""

from __future__ import annotations

import io
import re
import unicodedata
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from django import forms
from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.forms import AuthenticationForm, PasswordResetForm
from django.template.loader import render_to_string
from rest_framework import serializers

from accounts.models import API_KEY_NAME_MAX_LENGTH, PRODUCT_NAME_MAX_LENGTH, KeyMode, KeyScope
from core.api.exceptions import ApiError
from core.api.fields import (
    EMAIL_MAX_LENGTH,
    TAG,
    TAG_RULE,
    TEMPLATE_ID,
    TOPIC,
    DomainNameField,
    EmailAddressField,
    HttpsUrlField,
    TemplateAliasField,
    TemplateDataField,
    TextField,
)
from core.api.parsers import BodyNotObject, InvalidJson, JSONObjectParser
from core.errors import ApiKeyNameInvalid
from customer_webhooks.messages import recover_since_refusal
from customer_webhooks.models import (
    APP_UID,
    APP_UID_RULE,
    DESCRIPTION_MAX_LENGTH,
    EVENT_TYPE_RULE,
    EVENT_TYPES_MAX,
    RATE_LIMIT_MAX,
    Endpoint,
    is_event_type,
)
from customer_webhooks.models import NAME_MAX_LENGTH as APP_NAME_MAX_LENGTH
from customer_webhooks.services import EndpointChanges
from dashboard.mail import send_platform_email
from email_templates.engine import PART_MAX_CHARS, SUBJECT_MAX_CHARS
from email_templates.models import NAME_MAX_LENGTH
from event_endpoints.models import EventType
from notifications.delivery.http import is_refused_target
from notifications.models import JobStatus, JobType
from notifications.selectors import JobFilters
from providers.names import ProviderName
from suppressions.models import TOPIC_MAX_LENGTH, SuppressionReason


class SignUpForm(forms.Form):
    email = forms.EmailField(label="Email", widget=forms.EmailInput(attrs={"autocomplete": "email", "autofocus": True}))
    password = forms.CharField(
        label="Password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text=password_validation.password_validators_help_text_html(),
    )

    def clean_email(self) -> str:
        return str(self.cleaned_data["email"]).strip().lower()

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        email, password = cleaned.get("email"), cleaned.get("password")
        if email and password:
            # The validators compare the password with the address, as they would with a saved user.
            user = get_user_model()(username=email, email=email)
            try:
                password_validation.validate_password(password, user)
            except forms.ValidationError as error:
                self.add_error("password", error)
        return cleaned


class EmailAuthenticationForm(AuthenticationForm):
    """Django's sign-in form, asking for the email address the account was made with, in any letter case."""

    username = forms.EmailField(
        label="Email", widget=forms.EmailInput(attrs={"autocomplete": "email", "autofocus": True})
    )
    # A deleted account's user is inactive, and Django's backend refuses it like a wrong password.
    error_messages = {"invalid_login": "Wrong email or password."}

    def clean(self) -> dict[str, Any]:
        email = str(self.cleaned_data.get("username") or "").strip()
        stored = get_user_model().objects.filter(username__iexact=email).values_list("username", flat=True).first()
        if stored:
            self.cleaned_data["username"] = stored
        return super().clean()


class PlatformPasswordResetForm(PasswordResetForm):
    """Django's reset form, mailing through the platform's providers like every NotifyHub email."""

    email = forms.EmailField(label="Email", widget=forms.EmailInput(attrs={"autocomplete": "email", "autofocus": True}))

    def get_users(self, email: str) -> Iterator[Any]:
        """Django's (active users with a password), and a holder who has none yet: an account made by `manage.py
        createaccount` without `--password`, whose address the operator gave as the holder's own, so the link goes
        where the account's other mail goes (docs/dashboard.md, "Passwords"). Staff without a password stay out."""
        yield from super().get_users(email)
        holders = get_user_model().objects.filter(email__iexact=email, is_active=True, account__isnull=False)
        yield from (user for user in holders if not user.has_usable_password() and _same_address(email, user.email))

    def send_mail(
        self,
        subject_template_name: str,
        email_template_name: str,
        context: dict[str, Any],
        from_email: str | None,
        to_email: str,
        html_email_template_name: str | None = None,
    ) -> None:
        subject = "".join(render_to_string(subject_template_name, context).splitlines())
        send_platform_email(to=to_email, subject=subject, html=render_to_string(email_template_name, context))


def _same_address(typed: str, stored: str) -> bool:
    """Equal in any letter case after Unicode normalisation, as Django's own reset form compares them: the
    database's case-insensitive match alone may pair different addresses."""
    return unicodedata.normalize("NFKC", typed).casefold() == unicodedata.normalize("NFKC", stored).casefold()


class ConfirmPasswordForm(forms.Form):
    """Asks for the holder's password again before something that cannot be undone by them."""

    password = forms.CharField(
        label="Password", strip=False, widget=forms.PasswordInput(attrs={"autocomplete": "current-password"})
    )

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.user = user

    def clean_password(self) -> str:
        password = str(self.cleaned_data["password"])
        if not self.user.check_password(password):
            raise forms.ValidationError("That is not your password.")
        return password


# --- The API keys page --------------------------------------------------------------------------


class ProductNameForm(forms.Form):
    """The holder's product name, shown to its customers on the consumer portal; blank names none."""

    product_name = forms.CharField(
        label="Product name (optional)",
        required=False,
        max_length=PRODUCT_NAME_MAX_LENGTH,
        widget=forms.TextInput(attrs={"placeholder": "Acme Cloud", "autocomplete": "organization"}),
        help_text="Your customers see it on every page of the consumer portal, which they open from the links you "
        "make for them (POST /api/v1/apps/{app}/portal). Blank: the portal names no product.",
        error_messages={"max_length": f"Enter at most {PRODUCT_NAME_MAX_LENGTH} characters."},
    )

    def clean_product_name(self) -> str:
        name = str(self.cleaned_data["product_name"])
        if not name.isprintable():
            raise forms.ValidationError("Enter the name on one line, without control characters.")
        return name


class ApiKeyCreateForm(forms.Form):
    """A new key's name, scope and mode; ``accounts.services.api_key_create`` checks the name again, with the account's
    other keys, and the page shows its refusals."""

    name = forms.CharField(
        label="Name",
        max_length=API_KEY_NAME_MAX_LENGTH,
        # The service's own words, so the page and the API refuse a name alike.
        error_messages={"required": ApiKeyNameInvalid.message, "max_length": ApiKeyNameInvalid.message},
        widget=forms.TextInput(attrs={"placeholder": "CI", "autocomplete": "off", "spellcheck": "false"}),
        help_text="What uses the key, such as CI or the billing service: unique among your keys.",
    )
    scope = forms.ChoiceField(
        label="Scope",
        choices=KeyScope.choices,
        initial=KeyScope.FULL,
        help_text="Full access calls the whole API. Send only sends notifications (one at a time or in batches), "
        "cancels jobs and pings. Read only calls the reading (GET) operations and ping.",
    )
    # Live unless asked: a form posted before keys had modes makes the key it always made.
    mode = forms.TypedChoiceField(
        label="Mode",
        choices=KeyMode.choices,
        initial=KeyMode.LIVE,
        required=False,
        empty_value=KeyMode.LIVE,
        help_text="A test key's sends run every check and complete, but nothing is sent and no quota is spent; only "
        "test keys see its jobs, and this dashboard shows live ones. A test key can neither read nor change live "
        "data (suppressions, domain, event endpoints, usage, audit log).",
    )


# --- The domain page ---------------------------------------------------------------------------

# The API's own rule for a domain name, so the page and POST /api/v1/user/domain/request accept the same names.
_DOMAIN_NAME_RULE = DomainNameField()


class DomainRequestForm(forms.Form):
    domain = forms.CharField(
        label="Domain",
        max_length=253,
        error_messages={"required": "Enter your domain, such as example.com."},
        widget=forms.TextInput(
            attrs={"placeholder": "example.com", "autocomplete": "off", "autocapitalize": "none", "spellcheck": "false"}
        ),
        help_text="The domain your emails come from, without http:// or www.",
    )

    def clean_domain(self) -> str:
        try:
            return str(_DOMAIN_NAME_RULE.to_internal_value(self.cleaned_data["domain"]))
        except serializers.ValidationError:
            raise forms.ValidationError(
                "Enter a domain name such as example.com: letters, digits and hyphens, with no http:// or path."
            ) from None


class DomainDeleteForm(forms.Form):
    confirm = forms.BooleanField(
        label="I understand emails will stop until a new domain is verified",
        error_messages={"required": "Tick the box to confirm: your emails stop until a new domain is verified."},
    )


# --- The providers page ------------------------------------------------------------------------

# "new-password": browsers then never fill in the holder's saved NotifyHub password, which the page would send on to
# the provider. A refused or unchecked key comes back in its (masked) field: after "could not be reached" the holder
# tries again with one click, and the page carrying it is their own POST's answer, over HTTPS and never stored.
_SECRET_INPUT_ATTRS = {"autocomplete": "new-password", "autocapitalize": "none", "spellcheck": "false"}


class ProviderKeyForm(forms.Form):
    provider = forms.ChoiceField(label="Provider", choices=ProviderName.choices)
    api_key = forms.CharField(
        label="API key",
        max_length=200,
        widget=forms.PasswordInput(render_value=True, attrs=_SECRET_INPUT_ATTRS),
        error_messages={"required": "Paste the provider's API key."},
        help_text="SendGrid: an API key. Resend: a Full access API key (a sending-only key cannot register your "
        "domain). Postmark: the Server API token of the server you send from.",
    )
    account_token = forms.CharField(
        label="Postmark account token (optional)",
        required=False,
        max_length=200,
        widget=forms.PasswordInput(render_value=True, attrs=_SECRET_INPUT_ATTRS),
        help_text="Postmark only: your Account API token. Postmark needs it to register your sending domain; "
        "without it Postmark sends your email but takes no part in verifying the domain.",
    )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if cleaned.get("account_token") and cleaned.get("provider") != ProviderName.POSTMARK:
            self.add_error("account_token", "Only Postmark takes an account token: leave this empty for the others.")
        return cleaned


# --- The jobs page -------------------------------------------------------------------------------


class JobFilterForm(forms.Form):
    """The jobs page's query string: every filter optional, pages from 1."""

    type = forms.ChoiceField(label="Type", choices=[("", "All types"), *JobType.choices], required=False)
    status = forms.ChoiceField(label="Status", choices=[("", "All statuses"), *JobStatus.choices], required=False)
    to = forms.CharField(
        label="Sent to (address or host)",
        required=False,
        max_length=EMAIL_MAX_LENGTH,
        widget=forms.TextInput(attrs={"autocomplete": "off", "autocapitalize": "none", "spellcheck": "false"}),
    )
    tag = forms.CharField(
        label="Tag",
        required=False,
        widget=forms.TextInput(
            attrs={"maxlength": 64, "autocomplete": "off", "autocapitalize": "none", "spellcheck": "false"}
        ),
    )
    page = forms.IntegerField(min_value=1, required=False, widget=forms.HiddenInput)

    def clean_tag(self) -> str:
        """The API's rule for a tag (its ``tag`` filter's): a value no email could carry finds nothing, so it is
        refused."""
        tag = str(self.cleaned_data["tag"])
        if tag and not TAG.fullmatch(tag):
            raise forms.ValidationError(f"Enter a tag of {TAG_RULE}.")
        return tag

    def filters(self) -> JobFilters:
        """The list's filters: an address (it has an @) finds emails to it, anything else webhooks to that host."""
        sent_to = self.cleaned_data["to"].strip()
        return JobFilters(
            type=self.cleaned_data["type"] or None,
            status=self.cleaned_data["status"] or None,
            to=sent_to if "@" in sent_to else None,
            host=sent_to if sent_to and "@" not in sent_to else None,
            tag=self.cleaned_data["tag"] or None,
        )


# --- The webhooks page ---------------------------------------------------------------------------

# The API's own rule for a webhook URL, so the test goes where a job could.
_WEBHOOK_URL_RULE = HttpsUrlField()


class WebhookTestForm(forms.Form):
    url = forms.CharField(
        label="Your endpoint's URL",
        max_length=2048,
        error_messages={"required": "Enter the HTTPS URL of your endpoint."},
        widget=forms.URLInput(attrs={"placeholder": "https://example.com/webhooks/notifyhub", "autocomplete": "url"}),
    )

    def clean_url(self) -> str:
        try:
            return str(_WEBHOOK_URL_RULE.to_internal_value(self.cleaned_data["url"].strip()))
        except serializers.ValidationError:
            raise forms.ValidationError("Enter a full HTTPS URL, such as https://example.com/webhooks.") from None


# --- The suppressions page -----------------------------------------------------------------------

# Each reason as the page words it, in the filter's options and the list's column alike.
SUPPRESSION_REASONS: list[tuple[str, str]] = [
    (SuppressionReason.HARD_BOUNCE, "Hard bounce"),
    (SuppressionReason.SPAM_REPORT, "Spam complaint"),
    (SuppressionReason.UNSUBSCRIBED, "Unsubscribed"),
    (SuppressionReason.MANUAL, "Added by hand"),
]
# The API's largest page number: the offset of any page up to it fits the database's row numbers.
LAST_PAGE_NUMBER = 999_999_999


class PageForm(forms.Form):
    """A numbered list page's query string: pages from 1 (the audit log's whole query; others add their filters)."""

    page = forms.IntegerField(min_value=1, max_value=LAST_PAGE_NUMBER, required=False, widget=forms.HiddenInput)


TOPIC_INVALID = "Enter a topic of 1 to 64 lower-case letters, digits, _ and -, as your sends name it."


def topic_field(*, label: str, help_text: str = "", placeholder: str = "") -> forms.RegexField:
    """A topic as the API takes it (core.api.fields.TOPIC), whole."""
    return forms.RegexField(
        label=label,
        regex=rf"\A(?:{TOPIC.pattern})\Z",
        required=False,
        max_length=TOPIC_MAX_LENGTH,
        error_messages={"invalid": TOPIC_INVALID},
        help_text=help_text,
        widget=forms.TextInput(
            attrs={"placeholder": placeholder, "autocomplete": "off", "autocapitalize": "none", "spellcheck": "false"}
        ),
    )


class SuppressionFilterForm(PageForm):
    """The suppressions page's query string: a part of the address, a reason, a topic, pages from 1."""

    q = forms.CharField(
        label="Address contains",
        required=False,
        max_length=EMAIL_MAX_LENGTH,
        widget=forms.TextInput(attrs={"autocomplete": "off", "autocapitalize": "none", "spellcheck": "false"}),
    )
    reason = forms.ChoiceField(label="Reason", choices=[("", "All reasons"), *SUPPRESSION_REASONS], required=False)
    topic = topic_field(label="Topic")


# The API's own rule for an address, so the page and POST /api/v1/suppressions accept the same addresses.
_EMAIL_ADDRESS_RULE = EmailAddressField()


class SuppressionAddForm(forms.Form):
    email = forms.CharField(
        label="Email address",
        max_length=EMAIL_MAX_LENGTH,
        error_messages={"required": "Enter the email address to suppress."},
        widget=forms.EmailInput(
            attrs={"placeholder": "ada@example.com", "autocomplete": "off", "autocapitalize": "none"}
        ),
        help_text="From now on, every email to it fails at once. Letter case does not matter.",
    )
    topic = topic_field(
        label="Topic (optional)",
        placeholder="weekly-digest",
        help_text="Only the emails sent with this topic; empty for every email.",
    )

    def clean_email(self) -> str:
        try:
            return str(_EMAIL_ADDRESS_RULE.to_internal_value(self.cleaned_data["email"]))
        except serializers.ValidationError:
            raise forms.ValidationError(
                "Enter a full email address at a public domain, such as ada@example.com."
            ) from None


# --- The events page -----------------------------------------------------------------------------


class _EndpointUrlRule(serializers.Serializer):
    """The API's rule for an endpoint's ``url``, an event endpoint's (event_endpoints.serializers) and an app's
    endpoint's (customer_webhooks.serializers) alike: the page refuses the same URLs in the same words. The dashboard
    may not import another app's serializers (tests/test_layers.py), so it is restated here from the same parts."""

    url = HttpsUrlField(refused=is_refused_target)


def _endpoint_url(value: str) -> str:
    rule = _EndpointUrlRule(data={"url": value})
    if not rule.is_valid():
        raise forms.ValidationError([str(message) for message in rule.errors["url"]])
    return str(rule.validated_data["url"])


# Each type labelled by its value, the name an endpoint receives it by (``job.completed``).
EVENT_TYPE_CHOICES = [(event_type, event_type) for event_type in EventType.values]


class EventEndpointAddForm(forms.Form):
    # No max_length here: the API's rule counts the length, and says so in its own words.
    url = forms.CharField(
        label="Endpoint URL",
        error_messages={"required": "url must be a valid HTTPS URL"},
        widget=forms.URLInput(
            attrs={"placeholder": "https://example.com/notifyhub/events", "autocomplete": "url", "spellcheck": "false"}
        ),
        help_text="HTTPS, at a public address. A user:password in it is kept encrypted and shown as ***.",
    )
    events = forms.MultipleChoiceField(
        label="Event types",
        choices=EVENT_TYPE_CHOICES,
        widget=forms.CheckboxSelectMultiple,
        error_messages={
            "required": "Choose at least one event type",
            "invalid_choice": "Unknown event type: %(value)s",  # the API's words for a type it does not know
        },
    )

    def clean_url(self) -> str:
        return _endpoint_url(self.cleaned_data["url"])


# --- The templates pages ---------------------------------------------------------------------------


class _TemplatePartsRule(serializers.Serializer):
    """PUT /api/v1/templates/<alias>'s rules for a template's name and parts (email_templates.serializers): the page
    refuses what the API refuses, in its words. Restated from the same parts, as the event endpoint's URL rule is."""

    name = TextField(max_length=NAME_MAX_LENGTH, single_line=True)
    subject = TextField(max_length=SUBJECT_MAX_CHARS, single_line=True)
    html = TextField(max_length=PART_MAX_CHARS)
    text = TextField(max_length=PART_MAX_CHARS, required=False)


class _TemplateCreateRule(_TemplatePartsRule):
    """POST /api/v1/templates' rules: an alias too."""

    alias = TemplateAliasField()


def _part_widget(rows: int) -> forms.Textarea:
    return forms.Textarea(attrs={"rows": rows, "spellcheck": "false", "autocapitalize": "none", "class": "code"})


class TemplateForm(forms.Form):
    """A template's fields, for creating one (with its alias) or saving its next version (without): each checked
    by the API's own rule, in the API's words."""

    alias = forms.CharField(
        label="Alias",
        required=False,
        widget=forms.TextInput(attrs={"autocomplete": "off", "autocapitalize": "none", "spellcheck": "false"}),
        help_text="What a send names it by: 1 to 64 of a-z, 0-9, _ and -. It cannot be changed later.",
    )
    name = forms.CharField(label="Name", required=False, strip=False, help_text="For you: what the template is for.")
    subject = forms.CharField(
        label="Subject",
        required=False,
        strip=False,
        widget=forms.TextInput(attrs={"spellcheck": "false"}),
        help_text="One line of Liquid, such as Welcome, {{ name }}: output as written, not escaped.",
    )
    html = forms.CharField(
        label="HTML",
        required=False,
        strip=False,
        widget=_part_widget(14),
        # The help text is the page's HTML (form_fields.html): the tag is written as text.
        help_text="Liquid: what it outputs is HTML-escaped. &lt;style&gt; rules are inlined into the elements they "
        "match.",
    )
    text = forms.CharField(
        label="Plain text (optional)",
        required=False,
        strip=False,
        widget=_part_widget(6),
        help_text="Liquid, output as written. Left empty, the text part is made from the HTML.",
    )

    def __init__(self, *args: Any, creating: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.rule = _TemplateCreateRule if creating else _TemplatePartsRule
        if not creating:
            del self.fields["alias"]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        # A browser sends a textarea's lines ending in CR LF: the version keeps them as the API would be sent them.
        body = {name: value.replace("\r\n", "\n") for name, value in cleaned.items()}
        if not body.get("text"):
            body.pop("text", None)  # an empty text part is none: it is made from the HTML
        rule = self.rule(data=body)
        if not rule.is_valid():
            for name, messages in rule.errors.items():
                self.add_error(name, [str(message) for message in messages])
            return cleaned
        return {"text": None, **rule.validated_data}


class _TemplateDataRule(serializers.Serializer):
    """POST /api/v1/templates/<alias>/render's rule for ``data``: an object of at most 64 KB."""

    data = TemplateDataField()  # type: ignore[assignment]  # the body's field, not Serializer.data


class TemplatePreviewForm(forms.Form):
    sample_data = forms.CharField(
        label="Sample data (JSON)",
        required=False,
        strip=False,
        widget=_part_widget(8),
        help_text='A JSON object of at most 64 KB, as a send\'s data, such as {"name": "Ada"}.',
    )

    def clean_sample_data(self) -> dict[str, Any]:
        text = self.cleaned_data["sample_data"]
        if not text.strip():
            raise forms.ValidationError("data is required")
        try:
            # The API's own reading of JSON: no NaN, no number past a float's, not too deep, valid Unicode.
            value = JSONObjectParser().parse(io.BytesIO(text.encode()))
        except BodyNotObject:
            raise forms.ValidationError("data must be an object") from None
        except InvalidJson:
            raise forms.ValidationError("data must be valid JSON") from None
        except ApiError as error:
            raise forms.ValidationError(error.message) from None
        rule = _TemplateDataRule(data={"data": value})
        if not rule.is_valid():
            raise forms.ValidationError([str(message) for message in rule.errors["data"]])
        return dict(rule.validated_data["data"])


# --- The apps pages ------------------------------------------------------------------------------


class _AppNameRule(serializers.Serializer):
    """POST /api/v1/apps' rule for ``name`` (customer_webhooks.serializers), restated from the same parts."""

    name = TextField(max_length=APP_NAME_MAX_LENGTH, single_line=True)


class _EndpointDescriptionRule(serializers.Serializer):
    """POST /api/v1/apps/<app>/endpoints' rule for ``description``, restated from the same parts."""

    description = TextField(max_length=DESCRIPTION_MAX_LENGTH)


def _by_rule(rule: type[serializers.Serializer], name: str, value: str) -> Any:
    checked = rule(data={name: value})
    if not checked.is_valid():
        raise forms.ValidationError([str(message) for message in checked.errors[name]])
    return checked.validated_data[name]


_CODE_INPUT_ATTRS = {"autocomplete": "off", "autocapitalize": "none", "spellcheck": "false"}


class AppForm(forms.Form):
    """An app's uid and name, for adding one or changing it, each refused in the API's words. Changing, an empty uid
    keeps the one the app has: the API gives no way to take it away."""

    name = forms.CharField(
        label="Name",
        required=False,
        strip=False,
        widget=forms.TextInput(attrs={"placeholder": "Acme Inc.", "autocomplete": "off"}),
        help_text="Who the app is for: the customer whose endpoints it holds.",
    )
    uid = forms.CharField(
        label="UID (optional)",
        required=False,
        widget=forms.TextInput(attrs={"placeholder": "customer-42", **_CODE_INPUT_ATTRS}),
        help_text=f"Your own id for this customer, unique among your apps, {APP_UID_RULE}: the API takes it wherever "
        "it takes the app's id.",
    )

    def clean_name(self) -> str:
        return str(_by_rule(_AppNameRule, "name", self.cleaned_data["name"]))

    def clean_uid(self) -> str | None:
        """The rule of customer_webhooks.serializers.AppUidField: never shaped like a UUID, so that an id or a uid
        names one app only."""
        uid = str(self.cleaned_data["uid"])
        if not uid:
            return None
        if not APP_UID.fullmatch(uid):
            raise forms.ValidationError(f"uid must be {APP_UID_RULE}")
        if TEMPLATE_ID.fullmatch(uid):
            raise forms.ValidationError("uid must not be shaped like a UUID")
        return uid


# Event types in one text field: separated by commas, spaces or new lines.
_EVENT_TYPE_SEPARATORS = re.compile(r"[\s,]+")


RATE_LIMIT_REFUSED = f"Enter a whole number of deliveries a second, from 1 to {RATE_LIMIT_MAX:,}, or leave it empty."


class EndpointForm(forms.Form):
    """An app's endpoint, added or changed: each field by the API's rule for it."""

    url = forms.CharField(
        label="Endpoint URL",
        error_messages={"required": "url must be a valid HTTPS URL"},
        widget=forms.URLInput(
            attrs={"placeholder": "https://example.com/webhooks", "autocomplete": "url", "spellcheck": "false"}
        ),
        help_text="HTTPS, at a public address. A user:password in it is kept encrypted and shown as ***.",
    )
    event_types = forms.CharField(
        label="Event types (optional)",
        required=False,
        widget=forms.TextInput(attrs={"placeholder": "invoice.paid, invoice.failed", **_CODE_INPUT_ATTRS}),
        help_text=f"Separated by commas or spaces, at most {EVENT_TYPES_MAX}, each {EVENT_TYPE_RULE}. Empty: every "
        "type.",
    )
    description = forms.CharField(
        label="Description (optional)", required=False, strip=False, help_text="For you: what the endpoint is for."
    )
    rate_limit = forms.IntegerField(
        label="Rate limit (optional)",
        required=False,
        min_value=1,
        max_value=RATE_LIMIT_MAX,
        widget=forms.NumberInput(attrs={"placeholder": "10"}),
        error_messages=dict.fromkeys(("invalid", "min_value", "max_value"), RATE_LIMIT_REFUSED),
        help_text="At most this many deliveries a second reach it; the others wait their turn. Empty: no limit.",
    )

    def clean_url(self) -> str:
        return _endpoint_url(self.cleaned_data["url"])

    def clean_event_types(self) -> list[str]:
        """The rule of customer_webhooks.serializers.EventTypesField, in the page's words."""
        event_types = [name for name in _EVENT_TYPE_SEPARATORS.split(self.cleaned_data["event_types"]) if name]
        if len(event_types) > EVENT_TYPES_MAX:
            raise forms.ValidationError(f"Name at most {EVENT_TYPES_MAX} event types.")
        for index, event_type in enumerate(event_types):
            if not is_event_type(event_type):
                raise forms.ValidationError(f"{event_type} is not an event type: each is {EVENT_TYPE_RULE}.")
            if event_type in event_types[:index]:
                raise forms.ValidationError(f"{event_type} is named twice.")
        return event_types

    def clean_description(self) -> str | None:
        description = str(self.cleaned_data["description"])
        if not description.strip():
            return None
        return str(_by_rule(_EndpointDescriptionRule, "description", description))

    def changes(self, endpoint: Endpoint) -> EndpointChanges:
        """What the form changes of ``endpoint``, as customer_webhooks.services.endpoint_update takes it. The URL
        as the form showed it, its credentials masked (``***``), leaves the stored one and its credentials alone:
        given as it is, ``***`` would become the credentials."""
        changes = EndpointChanges(
            event_types=self.cleaned_data["event_types"],
            description=self.cleaned_data["description"],
            rate_limit=self.cleaned_data["rate_limit"],
        )
        if self.cleaned_data["url"] != endpoint.url:
            changes["url"] = self.cleaned_data["url"]
        return changes

    @staticmethod
    def initial_of(endpoint: Endpoint) -> dict[str, Any]:
        return {
            "url": endpoint.url,
            "event_types": ", ".join(endpoint.event_types),
            "description": endpoint.description,
            "rate_limit": endpoint.rate_limit,
        }


class EndpointRecoverForm(forms.Form):
    since = forms.DateTimeField(
        label="Failed since (UTC)",
        error_messages={"required": "Enter the time to recover from.", "invalid": "Enter a date and time."},
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
        help_text="Every delivery to this endpoint that failed and was sent since then is tried again from its first "
        "attempt.",
    )

    def clean_since(self) -> datetime:
        since: datetime = self.cleaned_data["since"]
        if refusal := recover_since_refusal(since):
            raise forms.ValidationError(f"since {refusal}")
        return since
