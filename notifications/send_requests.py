"""What a send's body may hold: the email and webhook request serializers, each field's rule beside its siblings
(docs/rules.md, "Order of checks on a send")."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import (
    extend_schema_serializer,
)
from rest_framework import serializers
from rest_framework.fields import SkipField

from core.api.fields import (
    EmailAddressField,
    EmailListField,
    HeadersField,
    HttpsUrlField,
    JsonObjectField,
    MailboxField,
    OneOfField,
    PositiveIntegerField,
    ReplyToField,
    TagsField,
    TemplateDataField,
    TextField,
    TopicField,
    ZonedDateTimeField,
    email_headers_field,
    metadata_field,
)
from core.api.serializers import BodySerializer
from notifications.attachments import AttachmentsField
from notifications.delivery.http import is_refused_target
from notifications.delivery.wire import json_bytes
from notifications.models import Priority
from notifications.secret_headers import SECRET_NAME_PARTS
from providers.base import JOB_ID_METADATA_KEY
from providers.names import ProviderName

WEBHOOK_METHODS = ["POST", "PUT", "PATCH", "DELETE"]
WEBHOOK_PAYLOAD_MAX_BYTES = 10 * 1024
# RFC 5322 caps a header line at 998 characters.
SUBJECT_MAX_LENGTH = 998
EMAIL_BODY_MAX_LENGTH = 256 * 1024
# Which custom headers are kept secret, as the send operation's description tells API clients.
SECRET_NAME_PARTS_TEXT = ", ".join(f"`{part}`" for part in SECRET_NAME_PARTS[:-1]) + f" or `{SECRET_NAME_PARTS[-1]}`"


def priority_field() -> OneOfField:
    return OneOfField(choices=Priority.values, required=False)


# The furthest ahead a send may be scheduled.
SEND_AT_MAX_AHEAD = timedelta(days=30)


class SendAtField(ZonedDateTimeField):
    """When a send goes out (docs/rules.md, "Scheduled sends"): at most SEND_AT_MAX_AHEAD from now; a past time
    sends at once."""

    def __init__(self) -> None:
        super().__init__(required=False)

    def to_internal_value(self, data: Any) -> datetime:
        moment = super().to_internal_value(data)
        if moment > timezone.now() + SEND_AT_MAX_AHEAD:
            self.reject("{name} must be within 30 days")
        return moment


SEND_AT_TEXT = (
    "`sendAt` (an RFC 3339 date-time with its zone, at most 30 days ahead) schedules the job: it stays `pending`, "
    "shown with `scheduledFor`, until then, and can be cancelled until it goes out. A time already past sends at once."
)


def idempotency_key_field() -> TextField:
    return TextField(max_length=255, single_line=True, required=False)


def provider_field() -> OneOfField:
    return OneOfField(choices=ProviderName.values, required=False)


# The pairing of `provider` and `fallback` that validate() checks: a fallback needs a provider, another one.
ROUTING_PAIR_RULES = {
    "dependentSchemas": {
        "fallback": {
            "required": ["provider"],
            "anyOf": [
                {
                    "properties": {
                        "provider": {"const": name},
                        "fallback": {"enum": [other for other in ProviderName.values if other != name]},
                    }
                }
                for name in ProviderName.values
            ],
        }
    }
}


# A message's recipients, `to`, `cc` and `bcc` together (docs/rules.md, "Rich email").
MAX_RECIPIENTS = 50
TOO_MANY_RECIPIENTS = f"A message may have at most {MAX_RECIPIENTS} recipients"

RICH_EMAIL_TEXT = (
    "`from` and each `replyTo` may carry a display name, `Acme Billing <billing@acme.com>` (one line of at most 200 "
    "characters; quote a name holding `, ; : @ ( ) [ ]`): the sender rules judge the address inside, and the name "
    "goes out as given. `cc` and `bcc` copy the message, `replyTo` (one address or a list of 1 to 5) takes its "
    "replies, `text` is its plain-text part (made from `body` when omitted), `headers` are its own headers (the "
    "message's addresses, subject, date, ids, MIME and unsubscribe headers are refused, in any case), and `tags` and "
    f"`metadata` label it (`metadata` may not set `job_id`, NotifyHub's own). A message has at most {MAX_RECIPIENTS} "
    "recipients in `to`, `cc` and `bcc` together, none twice (compared without case). A `cc` or `bcc` on the "
    "account's suppression list is left out of the message, and Get job status names it under "
    "`skippedRecipients`; a `to` on it fails the job on arrival."
)


TOPIC_TEXT = (
    "`topic` (1 to 64 of `a-z`, `0-9`, `_` and `-`) marks the email as one its recipient may stop getting: it goes "
    "out with `List-Unsubscribe` and `List-Unsubscribe-Post` (RFC 8058 one-click unsubscribe) pointing at "
    "NotifyHub's own unsubscribe page for that recipient and topic, and it is not sent to an address suppressed for "
    "the topic or for every email. An email without a topic (a transactional one) carries neither header, and only "
    "an address suppressed for every email stops it."
)


def recipient_list_field() -> EmailListField:
    # `to` is always one of the message's recipients.
    return EmailListField(max_items=MAX_RECIPIENTS - 1, too_many=TOO_MANY_RECIPIENTS, required=False)


# A send with a template (docs/templates.md, "Sending with a template"): `template` in place of `subject` and `body`.
TEMPLATE_COMBINED = "template cannot be combined with subject or body"
# An id (a UUID's 36 characters) or an alias (at most 64).
TEMPLATE_NAME_MAX_LENGTH = 64
TEMPLATE_TEXT = (
    "`template` (a template's id or alias) and `data` (an object of at most 64 KB) take the place of `subject` and "
    "`body`: the template's current version, or `templateVersion`, is rendered when the send is accepted, so any "
    "error in it is a 400 and every attempt and failover sends the same message even if the template changes. "
    "Get job status shows the rendered `subject`, `body` and `text` beside `template`, `templateVersion` and `data`."
)
# Who may come with what: a message is `subject` and `body`, or a `template`, never both; `data` and
# `templateVersion` only with a `template`.
MESSAGE_RULES = {
    "oneOf": [
        {"required": ["subject", "body"], "not": {"anyOf": [{"required": ["template"]}]}},
        {"required": ["template"], "not": {"anyOf": [{"required": ["subject"]}, {"required": ["body"]}]}},
    ],
    "dependentRequired": {"data": ["template"], "templateVersion": ["template"]},
}


class MessagePartField(TextField):
    """`subject` and `body`: required, unless the body names a `template`, which they may not then come with. Not
    required in the document's eyes, which says the pairing in MESSAGE_RULES."""

    # What get_value gives in place of a value: the part beside a template, the part left to a template, no part.
    COMBINED, LEFT_TO_TEMPLATE, MISSING = object(), object(), object()

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(required=False, **kwargs)

    def get_value(self, dictionary: Any) -> Any:
        if "template" in dictionary:
            return self.COMBINED if self.field_name in dictionary else self.LEFT_TO_TEMPLATE
        return super().get_value(dictionary) if self.field_name in dictionary else self.MISSING

    def validate_empty_values(self, data: Any) -> tuple[bool, Any]:
        if data is self.COMBINED:
            raise serializers.ValidationError(TEMPLATE_COMBINED, code="invalid")
        if data is self.LEFT_TO_TEMPLATE:
            raise SkipField()
        if data is self.MISSING:
            self.fail("required")
        return super().validate_empty_values(data)


@extend_schema_serializer(component_name="EmailRequest")
class EmailRequestSerializer(BodySerializer):
    body_rules = {**ROUTING_PAIR_RULES, **MESSAGE_RULES}

    to = EmailAddressField()
    subject = MessagePartField(max_length=SUBJECT_MAX_LENGTH, single_line=True)
    body = MessagePartField(max_length=EMAIL_BODY_MAX_LENGTH)
    priority = priority_field()
    idempotencyKey = idempotency_key_field()
    provider = provider_field()
    fallback = provider_field()
    sendAt = SendAtField()
    cc = recipient_list_field()
    bcc = recipient_list_field()
    replyTo = ReplyToField(required=False)
    text = TextField(max_length=EMAIL_BODY_MAX_LENGTH, required=False, required_message="{name} must be a string")
    headers = email_headers_field()
    tags = TagsField(required=False)
    metadata = metadata_field(reserved=(JOB_ID_METADATA_KEY,))
    attachments = AttachmentsField()
    topic = TopicField(required=False)
    template = TextField(max_length=TEMPLATE_NAME_MAX_LENGTH, single_line=True, required=False)
    templateVersion = PositiveIntegerField(required=False)
    data = TemplateDataField(required=False)  # type: ignore[assignment]  # the body's field, not Serializer.data

    def get_fields(self) -> dict[str, serializers.Field]:
        # Declared here because "from" is a Python keyword; placed after "body" so
        # errors are reported in the order docs/rules.md lists the fields.
        fields = list(super().get_fields().items())
        after_body = [name for name, _ in fields].index("body") + 1
        fields.insert(after_body, ("from", MailboxField(required=False)))
        return dict(fields)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        for needs_template in ("templateVersion", "data"):
            if needs_template in attrs and "template" not in attrs:
                raise serializers.ValidationError(f"`{needs_template}` requires `template` to be set")
        if "cc" in attrs or "bcc" in attrs:
            _check_recipients(attrs["to"], attrs.get("cc", []), attrs.get("bcc", []))
        provider, fallback = attrs.get("provider"), attrs.get("fallback")
        if fallback is not None and provider is None:
            raise serializers.ValidationError("`fallback` requires `provider` to be set")
        if fallback is not None and fallback == provider:
            raise serializers.ValidationError("`provider` and `fallback` must be different")
        return attrs


def _check_recipients(to: str, cc: list[str], bcc: list[str]) -> None:
    """The whole message's rules, once each field passed its own: at most MAX_RECIPIENTS, none twice (compared
    without case, as mailboxes and the suppression list compare them)."""
    if 1 + len(cc) + len(bcc) > MAX_RECIPIENTS:
        raise serializers.ValidationError(TOO_MANY_RECIPIENTS)
    seen = {to.lower()}
    for field, addresses in (("cc", cc), ("bcc", bcc)):
        for index, address in enumerate(addresses):
            if address.lower() in seen:
                raise serializers.ValidationError(f"{field}[{index}] repeats the recipient {address}")
            seen.add(address.lower())


@extend_schema_serializer(component_name="WebhookRequest")
class WebhookRequestSerializer(BodySerializer):
    url = HttpsUrlField(refused=is_refused_target)
    payload = JsonObjectField()
    method = OneOfField(choices=WEBHOOK_METHODS, required=False)
    headers = HeadersField(required=False)
    priority = priority_field()
    idempotencyKey = idempotency_key_field()
    sendAt = SendAtField()

    def validate_payload(self, payload: dict[str, Any]) -> dict[str, Any]:
        if len(json_bytes(payload)) > WEBHOOK_PAYLOAD_MAX_BYTES:
            raise serializers.ValidationError("payload must be at most 10kb")
        return payload
