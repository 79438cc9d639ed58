"""OpenAPI: the envelope every response really has, the API-key schemes, the errors an operation answers,
request fields and bodies as narrow as the API's checks, the links from an answer to what may follow it, and the
text of an operation served at more than one mount.

The views import :func:`error_responses` from here, which also registers this module's
drf-spectacular extensions before any schema is generated.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, cast

from drf_spectacular.extensions import (
    OpenApiAuthenticationExtension,
    OpenApiSerializerExtension,
    OpenApiSerializerFieldExtension,
)
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import ComponentRegistry, build_basic_type
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse

from core.api.exceptions import (
    ApiKeyInBothHeaders,
    ApiKeyInvalid,
    ApiKeyMissing,
    ApiKeyModeRefused,
    ApiKeyScopeRefused,
    AuthenticationRequired,
    CsrfFailed,
    LengthRequired,
    PayloadTooLarge,
    RateLimited,
    UnknownField,
    UnsupportedMediaType,
    ValidationFailed,
)
from core.api.fields import text_schema
from core.api.parsers import PARSER_REFUSALS
from core.errors import AccountInactive, AccountMissing, CodedError

if TYPE_CHECKING:
    from core.api.views import Mount, MountedView

TIMESTAMP = {"type": "string", "format": "date-time", "example": "2026-11-21T10:04:05.123Z"}
CODE_PATTERN = "^[a-z][a-z0-9]*(_[a-z0-9]+)*$"
ERROR_ENVELOPE = {
    "type": "object",
    "properties": {
        "success": {"type": "boolean", "enum": [False]},
        "error": {"type": "string", "description": "What went wrong, in words for people: show it, never parse it."},
        "code": {
            "type": "string",
            "pattern": CODE_PATTERN,
            "example": "job_not_found",
            "description": "The condition's stable name, for a program to branch on: a code never changes meaning. "
            "Each error answer lists the codes it carries. Any request may also be answered `internal_error` (500), "
            "or `service_unavailable` (503, with `Retry-After`) while a service NotifyHub needs is down.",
        },
        "details": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "description": "On some errors only: more than the message says, for a program to read.",
        },
        "timestamp": TIMESTAMP,
    },
    "required": ["success", "error", "code", "timestamp"],
}


# Where an error answer's description lists its codes.
CODES_LISTED = "\n\n`code`: "


class ErrorAnswer:
    """What an error status means for an operation, and the conditions it may answer (their codes are listed)."""

    def __init__(self, description: str, *conditions: type[CodedError]) -> None:
        self.description = description
        self.conditions = conditions

    def described(self) -> str:
        return f"{self.description}{CODES_LISTED}{self._codes()}."

    def added_to(self, described: str) -> str:
        """Another answer's `described` text, with this one's sentence after its own and its codes after theirs."""
        description, _, codes = described.rpartition(CODES_LISTED)
        return f"{description} {self.description}{CODES_LISTED}{codes.removesuffix('.')}, {self._codes()}."

    def _codes(self) -> str:
        return ", ".join(f"`{condition.code}`" for condition in self.conditions)


# What each error status means, as a client reads it; an operation may answer one more precisely.
ERROR_DESCRIPTIONS: dict[int, ErrorAnswer] = {
    400: ErrorAnswer(
        "The API key was sent in both `X-API-Key` and `Authorization`; send it in one.", ApiKeyInBothHeaders
    ),
    401: ErrorAnswer("The API key is missing or invalid.", ApiKeyMissing, ApiKeyInvalid),
    403: ErrorAnswer("The API key's account is inactive or deleted.", AccountInactive),
    411: ErrorAnswer("The body was sent chunked; send it with a `Content-Length` header.", LengthRequired),
    413: ErrorAnswer("The request body is too large.", PayloadTooLarge),
    415: ErrorAnswer("The request body is not `application/json`.", UnsupportedMediaType),
    429: ErrorAnswer(
        "The API key's rate limit for the rolling minute is used up. No `Retry-After` is sent.", RateLimited
    ),
}
# A body's refusals before any rule of the operation: its fields (one it does not know among them), or the body
# itself; and both key headers.
BODY_REFUSALS: tuple[type[CodedError], ...] = (
    ApiKeyInBothHeaders,
    UnknownField,
    ValidationFailed,
    *PARSER_REFUSALS,
)
# What a list operation's 400 means.
QUERY_REFUSED = ErrorAnswer(
    "A query parameter is invalid (the message names it), or the API key was sent in both headers.",
    ApiKeyInBothHeaders,
    ValidationFailed,
)
# For the account holder's endpoints, which take the dashboard's session as well as an API key.
SESSION_REFUSALS: tuple[type[CodedError], ...] = (AccountInactive, AccountMissing, CsrfFailed)
SESSION_ERROR_DESCRIPTIONS: dict[int, ErrorAnswer] = {
    401: ErrorAnswer(
        "Neither a signed-in session nor an API key was sent, or the API key is invalid.",
        AuthenticationRequired,
        ApiKeyInvalid,
    ),
    403: ErrorAnswer(
        "The account is inactive or deleted, or the signed-in user has no NotifyHub account. "
        "With a session, a POST or DELETE also needs the CSRF token.",
        *SESSION_REFUSALS,
    ),
}


def error_responses(
    *statuses: int, descriptions: Mapping[int, ErrorAnswer] | None = None
) -> dict[int, OpenApiResponse]:
    """The error answers of one operation, for ``@extend_schema(responses=...)``, each listing its codes.

    Each gets the error envelope's schema from :func:`wrap_responses_in_envelope`.
    """
    answers = {**ERROR_DESCRIPTIONS, **(descriptions or {})}
    return {status: OpenApiResponse(description=answers[status].described()) for status in sorted(statuses)}


_API_KEY_DESCRIPTION = (
    "An API key: `nh_` and 64 lowercase hexadecimal characters. Send it in one header only. A test key's sends run "
    "every check and complete without sending anything or spending quota; only test keys see their jobs. A test key "
    "calls only the operations whose `x-api-key-modes` holds `test`: none that reads or changes live data."
)
API_KEY_SCHEMES: dict[str, dict[str, Any]] = {
    "ApiKeyAuth": {"type": "apiKey", "in": "header", "name": "X-API-Key", "description": _API_KEY_DESCRIPTION},
    "BearerAuth": {"type": "http", "scheme": "bearer", "description": _API_KEY_DESCRIPTION},
}


class ApiKeySchemes(OpenApiAuthenticationExtension):
    """The API key: in ``X-API-Key`` or as ``Authorization: Bearer``, either one.

    Named by dotted path so that core imports nothing from the apps; it matches
    ``ApiKeyIfSentAuthentication`` too, a subclass taking the same key.
    """

    target_class = "accounts.authentication.ApiKeyAuthentication"
    match_subclasses = True
    # No schemes registered from here: drf-spectacular registers them once per authentication
    # class and would find the subclass's clashing with its base's. The hook below declares them.
    name: list[str] = []

    def get_security_requirement(self, auto_schema: AutoSchema) -> list[dict[str, list[Any]]]:
        # A list of requirements means either one will do (OpenAPI's OR).
        return [{name: []} for name in API_KEY_SCHEMES]

    def get_security_definition(self, auto_schema: AutoSchema) -> list[dict[str, Any]]:
        return []


class OneOfFieldSchema(OpenApiSerializerFieldExtension):
    """``OneOfField``: an enum of its choices, typed by their JSON type (``integer`` or ``string``)."""

    target_class = "core.api.fields.OneOfField"
    match_subclasses = True

    def map_serializer_field(self, auto_schema: AutoSchema, direction: str) -> dict[str, Any]:
        choices = list(self.target.choices)
        if all(isinstance(choice, int) and not isinstance(choice, bool) for choice in choices):
            schema = build_basic_type(OpenApiTypes.INT)
        elif all(isinstance(choice, str) for choice in choices):
            schema = build_basic_type(OpenApiTypes.STR)
        else:
            schema = {}  # mixed types: the enum alone says what is allowed
        return {**(schema or {}), "enum": choices}


class RequestSerializerSchema(OpenApiSerializerExtension):
    """A request body's schema: its fields, and the rules across them (``RequestSerializer.body_rules``)."""

    target_class = "core.api.serializers.RequestSerializer"
    match_subclasses = True

    def map_serializer(self, auto_schema: AutoSchema, direction: str) -> dict[str, Any]:
        # drf-spectacular's own recipe for adding to a serializer's schema: map it as it would, then extend.
        fields = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        return {**fields, **self.target.body_rules}


class TextFieldSchema(OpenApiSerializerFieldExtension):
    """``TextField``: a string of 1 to ``max_length`` characters, with what it refuses as a pattern."""

    target_class = "core.api.fields.TextField"
    match_subclasses = True

    def map_serializer_field(self, auto_schema: AutoSchema, direction: str) -> dict[str, Any]:
        return text_schema(max_length=self.target.max_length, single_line=self.target.single_line)


class EmailListFieldSchema(OpenApiSerializerFieldExtension):
    """``EmailListField``: an array of addresses, at most its ``max_items``."""

    target_class = "core.api.fields.EmailListField"

    def map_serializer_field(self, auto_schema: AutoSchema, direction: str) -> dict[str, Any]:
        return self.target.schema()


class StringMapFieldSchema(OpenApiSerializerFieldExtension):
    """``StringMapField``: an object whose keys and values are as narrow as its checks."""

    target_class = "core.api.fields.StringMapField"

    def map_serializer_field(self, auto_schema: AutoSchema, direction: str) -> dict[str, Any]:
        return self.target.schema()


def _success_envelope(data_schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"success": {"type": "boolean", "enum": [True]}, "data": data_schema, "timestamp": TIMESTAMP},
        "required": ["success", "data", "timestamp"],
    }


# Where ``@extend_schema(extensions=response_links(...))`` keeps an operation's links until
# :func:`attach_response_links` moves them onto its response (drf-spectacular has no place for links).
LINKS_EXTENSION = "x-response-links"


@dataclass(frozen=True)
class Link:
    """An OpenAPI link: an operation a response leads to, its parameters read from the response."""

    name: str
    operation_id: str
    description: str
    # Parameter name to runtime expression, e.g. ``{"job_id": "$response.body#/data/jobId"}``.
    parameters: Mapping[str, str] = field(default_factory=dict)

    def as_openapi(self) -> dict[str, Any]:
        link: dict[str, Any] = {"operationId": self.operation_id, "description": self.description}
        if self.parameters:
            link["parameters"] = dict(self.parameters)
        return link


def response_links(status: int, *links: Link) -> dict[str, Any]:
    """The links of an operation's ``status`` response, for ``@extend_schema(extensions=...)``."""
    return {LINKS_EXTENSION: {str(status): {link.name: link.as_openapi() for link in links}}}


def attach_response_links(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """drf-spectacular post-processing hook: each operation's :func:`response_links` onto its responses."""
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            for status, links in operation.pop(LINKS_EXTENSION, {}).items():
                operation["responses"][status]["links"] = links
    return result


def close_request_bodies(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """drf-spectacular post-processing hook: each request body's component allows no property it does not list
    (``additionalProperties: false``), as the API refuses a body field it does not know (``BodySerializer``; a
    batch's items are single send bodies, whose components these are as well)."""
    components = result.get("components", {}).get("schemas", {})
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            for media in operation.get("requestBody", {}).get("content", {}).values():
                body = media.get("schema", {})
                if "$ref" in body:
                    body = components[body["$ref"].removeprefix("#/components/schemas/")]
                body["additionalProperties"] = False
    return result


def wrap_responses_in_envelope(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """drf-spectacular post-processing hook: wrap each JSON response schema in the envelope.

    It also declares the API-key security schemes that :class:`ApiKeySchemes` refers to.
    """
    components = result.setdefault("components", {})
    components.setdefault("schemas", {})["ErrorEnvelope"] = ERROR_ENVELOPE
    components["securitySchemes"] = {**API_KEY_SCHEMES, **components.get("securitySchemes", {})}
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            for code, response in operation.get("responses", {}).items():
                content = response.setdefault("content", {})
                media = content.setdefault("application/json", {})
                if str(code).startswith("2"):
                    media["schema"] = _success_envelope(media.get("schema", {"type": "object"}))
                else:
                    media["schema"] = {"$ref": "#/components/schemas/ErrorEnvelope"}
    return result


@dataclass(frozen=True)
class OperationText:
    """The OpenAPI text of an operation served at more than one mount (core/api/views.py's ``MountedView``), written
    once. Each mount adds what it says: the prefix of every operation id (the operation's own and its links'
    targets'), the note after the summary, and what an error means to its callers. Words that differ otherwise are
    given per mount.
    """

    # The operation's id within a mount: "jobs_list" is "user_jobs_list" at the mount whose prefix is "user".
    operation: str
    summary: Mapping[Mount, str]
    description: str | Mapping[Mount, str]
    # The success answers, as ``extend_schema(responses=...)`` takes them; the error answers are ``errors``.
    responses: Mapping[int, Any]
    errors: tuple[int, ...]
    # What an error means for this operation, over what it means at the mount.
    error_descriptions: Mapping[int, ErrorAnswer] = field(default_factory=dict)
    # What an error may also mean for this operation, after what it means at the mount.
    error_additions: Mapping[int, ErrorAnswer] = field(default_factory=dict)
    # The 200 answer's links, each naming an operation by its id within the same mount.
    links: tuple[Link, ...] = ()
    parameters: tuple[OpenApiParameter, ...] = ()
    request: Any = None

    def operation_id_at(self, mount: Mount) -> str:
        return mount.operation_id(self.operation)

    def summary_at(self, mount: Mount) -> str:
        return self.summary[mount] + mount.summary_note

    def description_at(self, mount: Mount) -> str:
        return self.description if isinstance(self.description, str) else self.description[mount]

    def responses_at(self, mount: Mount) -> dict[int, Any]:
        errors = error_responses(*self.errors, descriptions={**mount.error_descriptions, **self.error_descriptions})
        for status, addition in self.error_additions.items():
            errors[status] = OpenApiResponse(description=addition.added_to(str(errors[status].description)))
        return {**self.responses, **errors}

    def extensions_at(self, mount: Mount) -> dict[str, Any]:
        links = [replace(link, operation_id=mount.operation_id(link.operation_id)) for link in self.links]
        return response_links(200, *links) if links else {}


SCOPES_EXTENSION = "x-api-key-scopes"
SCOPE_REFUSED = ErrorAnswer("Or the API key's scope does not allow this operation.", ApiKeyScopeRefused)
MODES_EXTENSION = "x-api-key-modes"
# The modes of a method the view's ``key_modes`` does not name: live keys alone, as accounts/access.py decides.
LIVE_MODE_ONLY = frozenset({"live"})
TEST_KEY_REFUSED = ErrorAnswer(
    "Or the API key is a test key, and this operation reads or changes live data.", ApiKeyModeRefused
)


class ApiSchema(AutoSchema):
    """Every operation: AutoSchema's, with the scopes and the modes of API key that may call it (the view's
    ``key_scopes`` and ``key_modes``), as ``x-api-key-scopes`` and ``x-api-key-modes`` and a line of its
    description. An operation no key may call has none of them."""

    def get_operation(
        self, path: str, path_regex: str, path_prefix: str, method: str, registry: ComponentRegistry
    ) -> dict[str, Any] | None:
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        scopes = getattr(self.view, "key_scopes", {}).get(self.method)
        if operation is None or not scopes:
            return operation
        names = sorted(str(scope) for scope in scopes)
        modes = sorted(str(mode) for mode in getattr(self.view, "key_modes", {}).get(self.method, LIVE_MODE_ONLY))
        operation[SCOPES_EXTENSION] = names
        operation[MODES_EXTENSION] = modes
        listed = " or ".join(f"`{name}`" for name in names)
        test_keys = "Test keys may call it too." if "test" in modes else "Test keys may not: it touches live data."
        description = operation.get("description", "")
        operation["description"] = f"{description}\n\nAPI keys of scope {listed} may call it. {test_keys}".strip()
        if refused := operation.get("responses", {}).get("403"):
            refused["description"] = SCOPE_REFUSED.added_to(refused["description"])
            if "test" not in modes:
                refused["description"] = TEST_KEY_REFUSED.added_to(refused["description"])
        return operation


class MountedSchema(ApiSchema):
    """A ``MountedView``'s operation: its ``openapi`` text as the view's mount reads it.

    drf-spectacular builds each path's view with that URL's ``as_view()`` arguments before it reads the view (its
    generator's ``create_view``), so the view here knows its mount. Every method is one AutoSchema leaves to be
    overridden ("override this for custom behaviour").
    """

    def get_operation_id(self) -> str:
        text, mount = _mounted(self)
        return text.operation_id_at(mount)

    def get_summary(self) -> str:
        text, mount = _mounted(self)
        return text.summary_at(mount)

    # AutoSchema's own get_description() drops the (path, method) of DRF's inspector, and tells mypy so the same way.
    def get_description(self) -> str:  # type: ignore[override]
        text, mount = _mounted(self)
        return text.description_at(mount)

    def get_override_parameters(self) -> list[Any]:
        text, _ = _mounted(self)
        return list(text.parameters)

    def get_request_serializer(self) -> Any:
        text, _ = _mounted(self)
        return text.request

    def get_response_serializers(self) -> Any:
        text, mount = _mounted(self)
        return text.responses_at(mount)

    def get_extensions(self) -> dict[str, Any]:
        text, mount = _mounted(self)
        return text.extensions_at(mount)


def _mounted(schema: AutoSchema) -> tuple[OperationText, Mount]:
    view = cast("MountedView", schema.view)
    assert view.mount is not None, "MountedView.as_view() serves a view only at its mount"
    return view.openapi, view.mount
