"""Serializer fields that accept exactly one JSON type and answer with the API's own messages.

DRF's own fields coerce (``123`` becomes ``"123"``, ``"5"`` becomes ``5``) and word their
errors their own way; a client of this API gets one plain sentence naming the field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, NoReturn
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import URLValidator, validate_email
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.api.envelope import iso_utc_or_none
from core.errors import UrlNotPublic
from core.mailbox import (
    DISPLAY_NAME_MAX_LENGTH,
    NAMED_ADDRESS_MAX_LENGTH,
    NAMED_ADDRESS_PATTERN,
    display_name_text,
    is_bracketed_address,
    is_named_address,
)

# RFC 9110 field-name token.
HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# Visible ASCII, spaces and tabs: what every HTTP stack sends unchanged (RFC 9110 field values
# also allow obsolete Latin-1 bytes, which clients decode differently).
HEADER_VALUE = re.compile(r"[\t\x20-\x7e]*")
# Hop-by-hop and framing headers: the HTTP client writes these for the request it sends.
RESERVED_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "upgrade",
        "expect",
    }
)
MAX_HEADERS = 50


def whole_value(pattern: str) -> str:
    """``pattern`` over a whole value, as the OpenAPI document gives it (ECMAScript's reading, no flags).

    Python's ``$`` also matches before a final newline, where ECMAScript's does not; ``(?!\\n)`` makes
    Python's tools (the document's generators and validators among them) read the pattern the same way.
    """
    return f"^(?:{pattern})$(?!\\n)"


def in_either_case(word: str) -> str:
    """A pattern of ``word`` in any mix of cases, written without flags (an OpenAPI pattern takes none)."""
    return "".join(f"[{char.upper()}{char}]" if char.isalpha() else char for char in word)


class StrictField(serializers.Field):
    required_message = "{name} is required"
    invalid_message = "{name} is invalid"

    def __init__(self, *, required_message: str | None = None, invalid_message: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.required_message = required_message or self.required_message
        self.invalid_message = invalid_message or self.invalid_message

    def fail(self, key: str, **kwargs: Any) -> NoReturn:
        template = self.required_message if key in ("required", "null") else self.invalid_message
        self.reject(template)

    def reject(self, template: str, *, at: str = "", **details: object) -> NoReturn:
        """Refuses the value with ``template`` naming the field as ``{name}`` (followed by ``at``, the part of it
        refused: ``[3]`` for a list's fourth item, ``.X-Tag`` for an object's entry); what the client sent goes in
        ``details``, never into the template, whose braces would otherwise be the client's to write."""
        raise serializers.ValidationError(template.format(name=f"{self.field_name}{at}", **details), code="invalid")

    def to_representation(self, value: Any) -> Any:
        return value


# What ``str.strip()`` removes (the characters ``str.isspace()`` names), written for a regular expression
# class that Python and ECMAScript read alike: a text of these alone is empty.
WHITESPACE_CLASS = r"\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"


def text_schema(*, max_length: int, single_line: bool) -> dict[str, Any]:
    """A :class:`TextField`'s OpenAPI schema: a string of 1 to ``max_length`` characters, what it refuses as a
    pattern. core.api.schema's ``TextFieldSchema`` gives it to each field; a query parameter takes it as it is."""
    return {"type": "string", "minLength": 1, "maxLength": max_length, "pattern": text_pattern(single_line=single_line)}


def text_pattern(*, single_line: bool) -> str:
    """The texts a :class:`TextField` takes, as one regular expression for the OpenAPI document: a character
    other than whitespace, no NUL, and on a single line no CR or LF. Its length is checked apart."""
    excluded = r"\x00\r\n" if single_line else r"\x00"
    return whole_value(f"[^{excluded}]*[^{WHITESPACE_CLASS}\\x00][^{excluded}]*")


class TextField(StrictField):
    """Its OpenAPI schema, which :func:`text_pattern` words, is core.api.schema's ``TextFieldSchema``."""

    invalid_message = "{name} must be a string"

    def __init__(self, *, max_length: int, single_line: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.max_length = max_length
        self.single_line = single_line

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        if not data.strip():
            self.reject("{name} must not be empty")
        if len(data) > self.max_length:
            self.reject(f"{{name}} must be at most {self.max_length} characters")
        if self.single_line and ("\r" in data or "\n" in data):
            self.reject("{name} must be a single line")
        if "\0" in data:
            self.reject("{name} must not contain NUL characters")
        return data


# RFC 5321's longest path (256 octets) less its angle brackets.
EMAIL_MAX_LENGTH = 254


EMAIL_SCHEMA = {"type": "string", "format": "email", "maxLength": EMAIL_MAX_LENGTH}


@extend_schema_field(EMAIL_SCHEMA)
class EmailAddressField(StrictField):
    """An address at a public DNS name: a hosted service has no business mailing ``localhost`` or an IP literal."""

    invalid_message = required_message = "{name} must be an email"

    def to_internal_value(self, data: Any) -> str:
        if not is_email_address(data):
            self.fail("invalid")
        return data


def is_email_address(data: Any) -> bool:
    """Whether ``data`` is an address :class:`EmailAddressField` takes."""
    if not isinstance(data, str) or len(data) > EMAIL_MAX_LENGTH:
        return False
    try:
        validate_email(data)
    except DjangoValidationError:
        return False
    return is_domain_name(data.rpartition("@")[2])


URL_MAX_LENGTH = 2048
_NOT_SPACE = f"[^{WHITESPACE_CLASS}]"
# A DNS label of ASCII letters, digits and inner hyphens, for the document's patterns.
_LABEL = "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_OCTET = "(0|25[0-5]|2[0-4][0-9]|1[0-9]?[0-9]?|[1-9][0-9]?)"
# A port a connection can use, 1 to 65535, without leading zeros (_has_usable_port).
_PORT = "([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
# The URLs HttpsUrlField takes, as the OpenAPI document gives them: URLValidator's grammar for `https` in either
# case, with hosts of ASCII labels and a letter-only top-level one, or IPv4 addresses. (The field also takes
# IPv6 hosts, internationalised names and a port written with leading zeros, and refuses a host name past 253
# characters, which the pattern does not count.) No `format`: "uri" would refuse what the field takes, such as
# non-ASCII text in the path.
HTTPS_URL_PATTERN = whole_value(
    f"{in_either_case('https')}://"
    f"([^{WHITESPACE_CLASS}:@/?#\\[\\]]+(:[^{WHITESPACE_CLASS}:@/?#\\[\\]]*)?@)?"  # user and password
    f"(({_LABEL}\\.)+([A-Za-z][A-Za-z-]{{0,61}}[A-Za-z]|[Xx][Nn]--[A-Za-z0-9]{{1,59}})\\.?|{_OCTET}(\\.{_OCTET}){{3}})"
    f"(:{_PORT})?"  # port
    f"([/?#]{_NOT_SPACE}*)?"  # path, query and fragment
)


@extend_schema_field({"type": "string", "maxLength": URL_MAX_LENGTH, "pattern": HTTPS_URL_PATTERN})
class HttpsUrlField(StrictField):
    """An HTTPS URL; with ``refused``, not one of those it names (a webhook's to a local address, say)."""

    invalid_message = required_message = "{name} must be a valid HTTPS URL"
    validator = URLValidator(schemes=["https"])

    def __init__(self, *, refused: Callable[[str], bool] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.refused = refused

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str) or len(data) > URL_MAX_LENGTH:
            self.fail("invalid")
        try:
            self.validator(data)
        except DjangoValidationError:
            self.fail("invalid")
        if not _has_usable_port(data):
            self.fail("invalid")
        if self.refused is not None and self.refused(data):
            raise serializers.ValidationError(UrlNotPublic.message, code="invalid")
        return data


def _has_usable_port(url: str) -> bool:
    """Whether the port ``url`` names, if any, is one a connection can use (1 to 65535): URLValidator takes any five
    digits."""
    try:
        port = urlsplit(url).port
    except ValueError:
        return False
    return port != 0


class OneOfField(StrictField):
    """A value from a fixed list, of the list's own JSON type (``"5"`` is not ``5``; ``true`` is not ``1``)."""

    def __init__(self, *, choices: Sequence[str | int], **kwargs: Any) -> None:
        listed = ", ".join(str(choice) for choice in choices)
        kwargs.setdefault("invalid_message", f"{{name}} must be one of {listed}")
        kwargs.setdefault("required_message", kwargs["invalid_message"])
        super().__init__(**kwargs)
        self.choices = list(choices)

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, bool) or not any(type(data) is type(c) and data == c for c in self.choices):
            self.fail("invalid")
        return data


@extend_schema_field({"type": "object", "additionalProperties": True})
class JsonObjectField(StrictField):
    invalid_message = "{name} must be an object"

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            self.fail("invalid")
        return data


# What a template's `data` may hold at most, as compact UTF-8 JSON (docs/templates.md, "Limits").
TEMPLATE_DATA_MAX_BYTES = 64 * 1024


@extend_schema_field({"type": "object"})
class TemplateDataField(JsonObjectField):
    """The object a template is rendered with: a send's `data`, a preview's."""

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        value = super().to_internal_value(data)
        if len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()) > TEMPLATE_DATA_MAX_BYTES:
            self.reject("{name} must be at most 64 KB")
        return value


HEADERS_SCHEMA = {
    "type": "object",
    "maxProperties": MAX_HEADERS,
    "propertyNames": {
        "pattern": whole_value(HEADER_NAME.pattern),
        "not": {"pattern": whole_value("|".join(in_either_case(name) for name in sorted(RESERVED_HEADERS)))},
    },
    "additionalProperties": {"type": "string", "pattern": whole_value(HEADER_VALUE.pattern)},
}


@extend_schema_field(HEADERS_SCHEMA)
class HeadersField(StrictField):
    invalid_message = "{name} must be an object of string values"

    def to_internal_value(self, data: Any) -> dict[str, str]:
        if not isinstance(data, dict) or not all(isinstance(value, str) for value in data.values()):
            self.fail("invalid")
        if len(data) > MAX_HEADERS:
            self.reject(f"{{name}} must have at most {MAX_HEADERS} entries")
        for name, value in data.items():
            if not HEADER_NAME.fullmatch(name):
                self.reject("{name} has an invalid header name: {header!r}", header=name)
            if name.lower() in RESERVED_HEADERS:
                self.reject(
                    "{name} must not set {header}: it describes the connection, which NotifyHub manages", header=name
                )
            if not HEADER_VALUE.fullmatch(value):
                self.reject("{name} has an invalid value for {header}", header=name)
        return data


# Rich email's fields (docs/rules.md, "Rich email").

EMAIL_REFUSED = "{name} must be an email"
NAMED_ADDRESS_SCHEMA = {
    "type": "string",
    "maxLength": NAMED_ADDRESS_MAX_LENGTH,
    "pattern": whole_value(NAMED_ADDRESS_PATTERN),
}
# An address, bare or with a display name before it in brackets.
MAILBOX_SCHEMA = {"anyOf": [EMAIL_SCHEMA, NAMED_ADDRESS_SCHEMA]}


def mailbox_refusal(value: Any) -> str | None:
    """Why ``value`` is not an address with an optional display name (core/mailbox.py), as a message template naming
    it ``{name}``; None when it is one."""
    if not isinstance(value, str) or not value.endswith(">"):
        return None if is_email_address(value) else EMAIL_REFUSED
    name, _, address = value[:-1].rpartition("<")
    if "\r" in name or "\n" in name:
        return "{name}'s display name must be a single line"
    if len(display_name_text(name.rstrip(" "))) > DISPLAY_NAME_MAX_LENGTH:
        return f"{{name}}'s display name must be at most {DISPLAY_NAME_MAX_LENGTH} characters"
    if not is_bracketed_address(address) or len(value) > NAMED_ADDRESS_MAX_LENGTH:
        return EMAIL_REFUSED
    if not is_named_address(value):
        return '{name} must be an email, or a name and an email as "Name <email>"; quote a name holding , ; : @ ( ) [ ]'
    return None


@extend_schema_field(MAILBOX_SCHEMA)
class MailboxField(StrictField):
    """An address, or a display name and the address in brackets: ``Acme Billing <billing@acme.com>``."""

    invalid_message = required_message = EMAIL_REFUSED

    def to_internal_value(self, data: Any) -> str:
        if refusal := mailbox_refusal(data):
            self.reject(refusal)
        return str(data)


REPLY_TO_MAX_ITEMS = 5


@extend_schema_field(
    {
        "anyOf": [
            MAILBOX_SCHEMA,
            {"type": "array", "minItems": 1, "maxItems": REPLY_TO_MAX_ITEMS, "items": MAILBOX_SCHEMA},
        ]
    }
)
class ReplyToField(StrictField):
    """One address (a display name allowed, as :class:`MailboxField`), or a list of 1 to 5."""

    invalid_message = required_message = f"{{name}} must be an email or a list of 1 to {REPLY_TO_MAX_ITEMS} emails"

    def to_internal_value(self, data: Any) -> str | list[str]:
        if isinstance(data, str):
            if refusal := mailbox_refusal(data):
                self.reject(refusal)
            return data
        if not isinstance(data, list) or not 1 <= len(data) <= REPLY_TO_MAX_ITEMS:
            self.fail("invalid")
        for index, item in enumerate(data):
            if refusal := mailbox_refusal(item):
                self.reject(refusal, at=f"[{index}]")
        return data


class EmailListField(StrictField):
    """A list of bare addresses, at most ``max_items``; ``too_many`` is the message past it. Its OpenAPI schema is
    core.api.schema's ``EmailListFieldSchema``."""

    invalid_message = required_message = "{name} must be a list of email addresses"

    def __init__(self, *, max_items: int, too_many: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.max_items = max_items
        self.too_many = too_many

    def to_internal_value(self, data: Any) -> list[str]:
        if not isinstance(data, list):
            self.fail("invalid")
        if len(data) > self.max_items:
            raise serializers.ValidationError(self.too_many, code="invalid")
        for index, address in enumerate(data):
            if not is_email_address(address):
                self.reject(EMAIL_REFUSED, at=f"[{index}]")
        return data

    def schema(self) -> dict[str, Any]:
        # uniqueItems: the send refuses an address given twice (the case aside), which the document can only say
        # of the same text.
        return {"type": "array", "maxItems": self.max_items, "uniqueItems": True, "items": EMAIL_SCHEMA}


# An email's tag: what every provider takes as a tag or category.
TAG = re.compile(r"[A-Za-z0-9_-]{1,64}")
TAG_RULE = "1 to 64 of A-Z, a-z, 0-9, _ and -"
TAG_SCHEMA = {"type": "string", "minLength": 1, "maxLength": 64, "pattern": whole_value(TAG.pattern)}
MAX_TAGS = 10
TAGS_SCHEMA = {"type": "array", "maxItems": MAX_TAGS, "items": TAG_SCHEMA}


@extend_schema_field(TAGS_SCHEMA)
class TagsField(StrictField):
    invalid_message = required_message = "{name} must be a list of strings"

    def to_internal_value(self, data: Any) -> list[str]:
        if not isinstance(data, list):
            self.fail("invalid")
        if len(data) > MAX_TAGS:
            self.reject(f"{{name}} must hold at most {MAX_TAGS} tags")
        for index, tag in enumerate(data):
            if not isinstance(tag, str) or not TAG.fullmatch(tag):
                self.reject(f"{{name}} must be {TAG_RULE}", at=f"[{index}]")
        return data


class StringMapField(StrictField):
    """An object of string values: at most ``max_entries``, each key matching ``key`` and none of ``refused_keys``
    (compared as ``key_case`` folds them), each value at most ``value_max_length`` characters without NUL and, with
    ``single_line_values``, without CR or LF. Its OpenAPI schema is :meth:`schema`."""

    invalid_message = required_message = "{name} must be an object of string values"

    def __init__(
        self,
        *,
        max_entries: int,
        key: re.Pattern[str],
        key_refused: str,
        refused_keys: Sequence[str],
        any_case: bool,
        value_max_length: int,
        single_line_values: bool,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.max_entries = max_entries
        self.key = key
        self.key_refused = key_refused
        # Each refused key as the messages name it, by the form compared.
        self.refused_keys = {(name.lower() if any_case else name): name for name in refused_keys}
        self.any_case = any_case
        self.value_max_length = value_max_length
        self.single_line_values = single_line_values

    def to_internal_value(self, data: Any) -> dict[str, str]:
        if not isinstance(data, dict):
            self.fail("invalid")
        if len(data) > self.max_entries:
            self.reject(f"{{name}} must have at most {self.max_entries} entries")
        for key, value in data.items():
            self._check_key(key)
            self._check_value(key, value)
        return data

    def _check_key(self, key: str) -> None:
        if not self.key.fullmatch(key):
            self.reject(self.key_refused, key=key)
        if refused := self.refused_keys.get(key.lower() if self.any_case else key):
            self.reject("{name} may not set {key}", key=refused)

    def _check_value(self, key: str, value: Any) -> None:
        at = f".{key}"
        if not isinstance(value, str):
            self.reject("{name} must be a string", at=at)
        if len(value) > self.value_max_length:
            self.reject(f"{{name}} must be at most {self.value_max_length} characters", at=at)
        if self.single_line_values and ("\r" in value or "\n" in value):
            self.reject("{name} must be a single line", at=at)
        if "\0" in value:
            self.reject("{name} must not contain NUL characters", at=at)

    def schema(self) -> dict[str, Any]:
        spelled = [
            in_either_case(name.lower()) if self.any_case else re.escape(name) for name in self.refused_keys.values()
        ]
        excluded = r"\x00\r\n" if self.single_line_values else r"\x00"
        return {
            "type": "object",
            "maxProperties": self.max_entries,
            "propertyNames": {
                "pattern": whole_value(self.key.pattern),
                "not": {"pattern": whole_value("|".join(spelled))},
            },
            "additionalProperties": {
                "type": "string",
                "maxLength": self.value_max_length,
                "pattern": whole_value(f"[^{excluded}]*"),
            },
        }


# RFC 5322's field name: printable ASCII but the colon.
EMAIL_HEADER_NAME = re.compile(r"[!-9;-~]+")
# What NotifyHub or the providers write on every message, and the unsubscribe headers a provider manages.
EMAIL_HEADERS_REFUSED = (
    "From",
    "To",
    "Cc",
    "Bcc",
    "Subject",
    "Reply-To",
    "Sender",
    "Date",
    "Message-ID",
    "MIME-Version",
    "Content-Type",
    "Content-Transfer-Encoding",
    "Content-Disposition",
    "Return-Path",
    "DKIM-Signature",
    "Received",
    "List-Unsubscribe",
    "List-Unsubscribe-Post",
)


def email_headers_field() -> StringMapField:
    """An email's own headers: at most 50, one line each of at most 998 characters (RFC 5322's line)."""
    return StringMapField(
        max_entries=MAX_HEADERS,
        key=EMAIL_HEADER_NAME,
        key_refused="{name} has an invalid header name: {key!r}",
        refused_keys=EMAIL_HEADERS_REFUSED,
        any_case=True,
        value_max_length=998,
        single_line_values=True,
        required=False,
    )


METADATA_KEY = re.compile(r"[A-Za-z0-9_-]{1,40}")


def metadata_field(*, reserved: Sequence[str]) -> StringMapField:
    """A message's metadata, which rides to the providers and back on its events: at most 20 entries, each value at
    most 500 characters; ``reserved``, the keys NotifyHub sets itself."""
    return StringMapField(
        max_entries=20,
        key=METADATA_KEY,
        key_refused="{name} keys must be 1 to 40 of A-Z, a-z, 0-9, _ and -, not {key!r}",
        refused_keys=reserved,
        any_case=False,
        value_max_length=500,
        single_line_values=False,
        required=False,
    )


@extend_schema_field(TAG_SCHEMA)
class TagField(StrictField):
    """One tag, as the jobs list's ``tag`` filter takes it (docs/rules.md, "Listing jobs")."""

    invalid_message = required_message = f"{{name}} must be {TAG_RULE}"

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str) or not TAG.fullmatch(data):
            self.fail("invalid")
        return data


# An email's topic, which its recipient may unsubscribe from alone (docs/suppressions.md, "Topics"): lower case, as
# it appears in the unsubscribe page and the suppression list.
TOPIC = re.compile(r"[a-z0-9_-]{1,64}")
TOPIC_RULE = "1 to 64 of a-z, 0-9, _ and -"
TOPIC_SCHEMA = {"type": "string", "minLength": 1, "maxLength": 64, "pattern": whole_value(TOPIC.pattern)}


@extend_schema_field(TOPIC_SCHEMA)
class TopicField(StrictField):
    """An email's topic: on a send, a suppression, and the suppression list's filter."""

    invalid_message = required_message = f"{{name}} must be {TOPIC_RULE}"

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str) or not TOPIC.fullmatch(data):
            self.fail("invalid")
        return data


# At least 1, at most nine digits, as PositiveIntegerParamField takes it.
POSITIVE_INTEGER_SCHEMA = {"type": "integer", "minimum": 1, "maximum": 999_999_999}


@extend_schema_field(POSITIVE_INTEGER_SCHEMA)
class PositiveIntegerField(StrictField):
    """A JSON integer, at least 1, at most nine digits. JSON has one number type, and JSON Schema's integer is a
    number without a fraction, so `3.0` is 3 (a boolean or a string is never one)."""

    invalid_message = "{name} must be a positive integer"

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, float) and data.is_integer():
            data = int(data)
        if isinstance(data, bool) or not isinstance(data, int) or not 1 <= data <= 999_999_999:
            self.fail("invalid")
        return data


# A template's alias (docs/templates.md).
TEMPLATE_ALIAS = re.compile(r"[a-z0-9_-]{1,64}")
# What reads as a template's id where an id or an alias is taken (email_templates.selectors): 32 hexadecimal digits,
# hyphens anywhere among them, as a UUID is written. An alias is never one, so no lookup can mean two templates.
TEMPLATE_ID = re.compile(r"(-*[0-9a-fA-F]){32}-*")
TEMPLATE_ALIAS_SCHEMA = {
    "type": "string",
    "minLength": 1,
    "maxLength": 64,
    "pattern": whole_value(f"(?!(?:{TEMPLATE_ID.pattern})$){TEMPLATE_ALIAS.pattern}"),
}


@extend_schema_field(TEMPLATE_ALIAS_SCHEMA)
class TemplateAliasField(StrictField):
    invalid_message = required_message = "{name} must be 1 to 64 of a-z, 0-9, _ and -"

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str) or not TEMPLATE_ALIAS.fullmatch(data):
            self.fail("invalid")
        if TEMPLATE_ID.fullmatch(data):
            self.reject("{name} must not be shaped like a template id")
        return data


@extend_schema_field(POSITIVE_INTEGER_SCHEMA)
class PositiveIntegerParamField(StrictField):
    """A query parameter of decimal digits, at least 1."""

    invalid_message = "{name} must be a positive integer"

    def to_internal_value(self, data: Any) -> int:
        if not isinstance(data, str) or not data.isascii() or not data.isdigit() or len(data) > 9:
            self.fail("invalid")
        if int(data) < 1:
            self.fail("invalid")
        return int(data)


# A registrable DNS name: labels of letters, digits and inner hyphens, a letter-only TLD (or
# an internationalised one in its IDNA form, xn--...).
DOMAIN_NAME = re.compile(r"(?=.{4,253}$)((?!-)[a-z0-9-]{1,63}(?<!-)\.)+([a-z]{2,63}|xn--[a-z0-9-]{1,59})")
# The names DomainNameField takes, as the OpenAPI document gives them: DOMAIN_NAME in either case, its
# lookbehind spelled out (JSON Schema's portable patterns have none). The field also forgives surrounding
# whitespace and the root's trailing dot, which a document of host names does not offer.
DOMAIN_NAME_SCHEMA = {
    "type": "string",
    "format": "hostname",
    "maxLength": 253,
    "pattern": whole_value(rf"({_LABEL}\.)+([A-Za-z]{{2,63}}|[Xx][Nn]--[A-Za-z0-9-]{{1,59}})"),
}


@extend_schema_field(DOMAIN_NAME_SCHEMA)
class DomainNameField(StrictField):
    invalid_message = required_message = "{name} must be a domain name such as example.com"

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        name = data.strip().rstrip(".").lower()
        if not DOMAIN_NAME.fullmatch(name):
            self.fail("invalid")
        return name


def is_domain_name(name: str) -> bool:
    """A dotted DNS name with a letter-only top-level label; internationalised names by their IDNA form."""
    try:
        ascii_name = name.encode("idna").decode("ascii").lower()
    except UnicodeError:
        return False
    return DOMAIN_NAME.fullmatch(ascii_name) is not None


# RFC 3339's date-time (section 5.6), all of it: datetime.fromisoformat also reads ISO 8601's other forms (basic,
# week and ordinal dates, a space for the T, times without seconds, offsets without a colon), which it does not.
RFC_3339_DATE_TIME = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})"
)
# The seconds of a time of day given as 60: RFC 3339's leap second.
LEAP_SECOND = re.compile(r"(T\d{2}:\d{2}):60")


@extend_schema_field({"type": "string", "format": "date-time"})
class ZonedDateTimeField(StrictField):
    """An RFC 3339 date-time (the OpenAPI ``date-time`` format), so always with its zone (``Z`` or an offset): a time
    without one would be a guess. Its ``t`` and ``z`` may be in lower case, and a leap second (``:60``) is read as the
    second before it, which Python's datetime cannot hold. ISO 8601's other forms are refused."""

    invalid_message = "{name} must be an ISO 8601 date-time"

    def to_internal_value(self, data: Any) -> datetime:
        if not isinstance(data, str) or not RFC_3339_DATE_TIME.fullmatch(data):
            self.fail("invalid")
        try:
            moment = datetime.fromisoformat(LEAP_SECOND.sub(r"\1:59", data.upper()))
        except ValueError:
            self.fail("invalid")
        if moment.tzinfo is None:
            self.fail("invalid")
        return moment


class IsoDateTimeField(serializers.DateTimeField):
    def to_representation(self, value: datetime | None) -> str | None:  # type: ignore[override]
        return iso_utc_or_none(value)
