"""Templates over the API: create, list, read, replace, delete, their versions, and a preview (docs/templates.md)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.access import ANY_MODE, CHANGES, LIVE_ONLY, READS, ApiKeyView
from accounts.authentication import request_account
from core.api.fields import POSITIVE_INTEGER_SCHEMA, PositiveIntegerParamField
from core.api.pages import PageQuery, page_parameters
from core.api.schema import BODY_REFUSALS, QUERY_REFUSED, ErrorAnswer, error_responses
from core.api.serializers import RequestSerializer
from core.errors import (
    TemplateAliasTaken,
    TemplateDataMissing,
    TemplateLimit,
    TemplateNotFound,
    TemplateNotRendered,
    TemplateSyntaxInvalid,
    TemplateVersionNotFound,
)
from email_templates.engine import LOOP_ITERATIONS_MAX, PART_MAX_CHARS
from email_templates.models import TEMPLATES_PER_ACCOUNT
from email_templates.selectors import (
    template_get,
    template_list,
    template_preview,
    template_version_get,
    template_version_list,
)
from email_templates.serializers import (
    TemplateCreateRequestSerializer,
    TemplatePageSerializer,
    TemplateRenderedSerializer,
    TemplateRenderRequestSerializer,
    TemplateSerializer,
    TemplateUpdateRequestSerializer,
    TemplateVersionPageSerializer,
)
from email_templates.services import template_create, template_delete, template_update

DELETED_MESSAGE = "Template deleted"
NOT_FOUND = ErrorAnswer("No template of this id or alias in the account.", TemplateNotFound)
LANGUAGE_TEXT = (
    "Parts are Liquid: `html` escapes what it outputs, `subject` and `text` do not; `<style>` rules are inlined into "
    "the HTML (`@media` kept, no stylesheet fetched). A variable output without a `default` filter and missing from "
    "`data` is an error; in a condition it is false. `include` and `render` do not exist: a template is one text. "
    f"Limits per part: {PART_MAX_CHARS} characters of output and {LOOP_ITERATIONS_MAX} loop iterations."
)
SAVE_REFUSED = ErrorAnswer(
    "The body holds a field the operation does not take, breaks a rule (the message names the field), is not a JSON "
    "object, or a part is not Liquid that parses (the message names the part and the line).",
    *BODY_REFUSALS,
    TemplateSyntaxInvalid,
)
SAVE_ERRORS = (400, 401, 403, 411, 413, 415, 429)


class TemplateQuery(RequestSerializer):
    version = PositiveIntegerParamField(required=False)


class TemplatesView(ApiKeyView):
    key_scopes = {"GET": READS, "POST": CHANGES}
    # A test send renders live templates, so a test key reads them; only a live key changes them.
    key_modes = {"GET": ANY_MODE, "POST": LIVE_ONLY}

    @extend_schema(
        operation_id="templates_list",
        summary="List templates",
        description="A page of the account's templates by alias, without their parts: each with its current version.",
        parameters=[*page_parameters("Templates")],
        responses={
            200: TemplatePageSerializer,
            **error_responses(400, 401, 403, 429, descriptions={400: QUERY_REFUSED}),
        },
    )
    def get(self, request: Request) -> Response:
        page = PageQuery.of(request).asked_page
        templates, total = template_list(account=request_account(request), page=page.number, limit=page.limit)
        return Response(TemplatePageSerializer({"data": templates, "pagination": page.pagination(total)}).data)

    @extend_schema(
        summary="Create a template",
        description=(
            "Saves a template as its version 1; the answer lists the `variables` its parts read. "
            f"{LANGUAGE_TEXT} At most {TEMPLATES_PER_ACCOUNT} templates per account; an alias is unique in it."
        ),
        request=TemplateCreateRequestSerializer,
        responses={
            201: TemplateSerializer,
            **error_responses(
                *SAVE_ERRORS,
                409,
                descriptions={
                    400: SAVE_REFUSED,
                    409: ErrorAnswer(
                        f"The alias is taken, or the account has {TEMPLATES_PER_ACCOUNT} templates already.",
                        TemplateAliasTaken,
                        TemplateLimit,
                    ),
                },
            ),
        },
    )
    def post(self, request: Request) -> Response:
        serializer = TemplateCreateRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        version = template_create(account=request_account(request), **serializer.validated_data)
        return Response(TemplateSerializer(version).data, status=201)


class TemplateView(ApiKeyView):
    key_scopes = {"GET": READS, "PUT": CHANGES, "DELETE": CHANGES}
    key_modes = {"GET": ANY_MODE, "PUT": LIVE_ONLY, "DELETE": LIVE_ONLY}

    @extend_schema(
        summary="Get a template",
        description="The template by id or alias, at its current version or at `version`.",
        parameters=[
            OpenApiParameter("version", POSITIVE_INTEGER_SCHEMA, description="A version other than the current")
        ],
        responses={
            200: TemplateSerializer,
            **error_responses(
                400,
                401,
                403,
                404,
                429,
                descriptions={
                    400: QUERY_REFUSED,
                    404: ErrorAnswer(
                        "No template of this id or alias in the account, or no such version of it.",
                        TemplateNotFound,
                        TemplateVersionNotFound,
                    ),
                },
            ),
        },
    )
    def get(self, request: Request, template: str) -> Response:
        query = TemplateQuery.of(request)
        found = template_get(account=request_account(request), template=template)
        version = template_version_get(template=found, version=query.validated_data.get("version"))
        return Response(TemplateSerializer(version).data)

    @extend_schema(
        summary="Replace a template",
        description=(
            "Saves the parts as the template's next version, which becomes current (the older ones stay readable); "
            f"`name`, when given, renames it. {LANGUAGE_TEXT}"
        ),
        request=TemplateUpdateRequestSerializer,
        responses={
            200: TemplateSerializer,
            **error_responses(*SAVE_ERRORS, 404, descriptions={400: SAVE_REFUSED, 404: NOT_FOUND}),
        },
    )
    def put(self, request: Request, template: str) -> Response:
        serializer = TemplateUpdateRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        found = template_get(account=request_account(request), template=template)
        version = template_update(template=found, **serializer.validated_data)
        return Response(TemplateSerializer(version).data)

    @extend_schema(
        summary="Delete a template",
        description=(
            "Deletes the template and all its versions: its alias is free again, and a send naming it is refused. "
            "Jobs already accepted keep what they rendered."
        ),
        responses={
            200: inline_serializer(
                "TemplateDeleted",
                {"id": serializers.UUIDField(), "alias": serializers.CharField(), "message": serializers.CharField()},
            ),
            **error_responses(400, 401, 403, 404, 429, descriptions={404: NOT_FOUND}),
        },
    )
    def delete(self, request: Request, template: str) -> Response:
        found = template_get(account=request_account(request), template=template)
        deleted = {"id": str(found.id), "alias": found.alias, "message": DELETED_MESSAGE}
        template_delete(found)
        return Response(deleted)


class TemplateVersionsView(ApiKeyView):
    key_scopes = {"GET": READS}
    key_modes = {"GET": ANY_MODE}

    @extend_schema(
        summary="List a template's versions, newest first",
        description="Each version's number, the variables it reads and when it was saved; Get a template reads one.",
        parameters=[*page_parameters("Versions")],
        responses={
            200: TemplateVersionPageSerializer,
            **error_responses(400, 401, 403, 404, 429, descriptions={400: QUERY_REFUSED, 404: NOT_FOUND}),
        },
    )
    def get(self, request: Request, template: str) -> Response:
        page = PageQuery.of(request).asked_page
        found = template_get(account=request_account(request), template=template)
        versions, total = template_version_list(template=found, page=page.number, limit=page.limit)
        return Response(TemplateVersionPageSerializer({"data": versions, "pagination": page.pagination(total)}).data)


class TemplateRenderView(ApiKeyView):
    key_scopes = {"POST": READS}
    key_modes = {"POST": ANY_MODE}

    @extend_schema(
        summary="Render a template",
        description=(
            "Renders the template's current version with `data` (an object of at most 64 KB) as a send would: "
            "nothing is sent and no quota is used. `text` is the template's own, or made from the HTML."
        ),
        request=TemplateRenderRequestSerializer,
        responses={
            200: TemplateRenderedSerializer,
            **error_responses(
                *SAVE_ERRORS,
                404,
                descriptions={
                    400: ErrorAnswer(
                        "The body holds a field the operation does not take, `data` is not an object of at most "
                        "64 KB, the data lacks a variable the template outputs, or the render failed (a limit "
                        "reached, a filter given what it cannot take).",
                        *BODY_REFUSALS,
                        TemplateDataMissing,
                        TemplateNotRendered,
                    ),
                    404: NOT_FOUND,
                },
            ),
        },
    )
    def post(self, request: Request, template: str) -> Response:
        serializer = TemplateRenderRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        found = template_get(account=request_account(request), template=template)
        rendered = template_preview(
            version=template_version_get(template=found), data=serializer.validated_data["data"]
        )
        return Response(TemplateRenderedSerializer(rendered).data)
