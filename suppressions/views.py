"""The suppression list over the API: list, add by hand, remove (docs/suppressions.md)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_serializer, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.access import CHANGES, LIVE_ONLY, READS, ApiKeyView
from accounts.authentication import request_account
from core.api.fields import EMAIL_SCHEMA, TOPIC_SCHEMA, EmailAddressField, OneOfField, TopicField
from core.api.pages import PageQuery, page_parameters
from core.api.schema import BODY_REFUSALS, QUERY_REFUSED, ErrorAnswer, error_responses
from core.api.serializers import BodySerializer, RequestSerializer
from core.errors import AddressSuppressed, SuppressionNotFound
from suppressions.models import SuppressionReason
from suppressions.selectors import normalized_address, suppression_list
from suppressions.serializers import SuppressionPageSerializer, SuppressionSerializer
from suppressions.services import suppression_add, suppression_remove

REMOVED_MESSAGE = "Address removed from the suppression list"


class SuppressionListQuery(PageQuery):
    email = EmailAddressField(required=False)
    reason = OneOfField(choices=SuppressionReason.values, required=False)
    topic = TopicField(required=False)


class SuppressionQuery(RequestSerializer):
    topic = TopicField(required=False)


class SuppressionsView(ApiKeyView):
    key_scopes = {"GET": READS, "POST": CHANGES}
    key_modes = {"GET": LIVE_ONLY, "POST": LIVE_ONLY}

    @extend_schema_serializer(component_name="SuppressionRequest")
    class InputSerializer(BodySerializer):
        email = EmailAddressField()
        topic = TopicField(required=False)

    @extend_schema(
        summary="List suppressed addresses, newest first",
        description=(
            "A page of the account's suppression list, newest first: the addresses no email of the account goes to, "
            "each with why (`HARD_BOUNCE`, `SPAM_REPORT`, `UNSUBSCRIBED` from a provider's event or the recipient's "
            "own unsubscribe, or `MANUAL`), when, the provider and job of the event that added it, and its `topic` "
            "(null: every email). Filters combine."
        ),
        parameters=[
            *page_parameters("Addresses"),
            OpenApiParameter("email", EMAIL_SCHEMA, description="Only this address (compared without case)"),
            OpenApiParameter("reason", str, enum=SuppressionReason.values, description="Only addresses added so"),
            OpenApiParameter("topic", TOPIC_SCHEMA, description="Only the entries for this topic"),
        ],
        responses={
            200: SuppressionPageSerializer,
            **error_responses(400, 401, 403, 429, descriptions={400: QUERY_REFUSED}),
        },
    )
    def get(self, request: Request) -> Response:
        query = SuppressionListQuery.of(request)
        page = query.asked_page
        suppressions, total = suppression_list(
            account=request_account(request),
            page=page.number,
            limit=page.limit,
            email=query.validated_data.get("email"),
            reason=query.validated_data.get("reason"),
            topic=query.validated_data.get("topic"),
        )
        return Response(SuppressionPageSerializer({"data": suppressions, "pagination": page.pagination(total)}).data)

    @extend_schema(
        summary="Suppress an address",
        description=(
            "Adds the address by hand (reason `MANUAL`), for every email or, with `topic`, for the emails sent with "
            "that topic only: from now on such an email to it is accepted and its job fails at once, without any "
            "provider call; it takes its quota unit as any send does. Addresses compare without case."
        ),
        request=InputSerializer,
        responses={
            201: SuppressionSerializer,
            **error_responses(
                400,
                401,
                403,
                409,
                411,
                413,
                415,
                429,
                descriptions={
                    400: ErrorAnswer(
                        "The body holds a field the operation does not take, breaks a rule (the message names the "
                        "field), is not a JSON object, or the API key was sent in both headers.",
                        *BODY_REFUSALS,
                    ),
                    409: ErrorAnswer(
                        "The address is on the list already for the same topic (or for every email), for any reason.",
                        AddressSuppressed,
                    ),
                },
            ),
        },
    )
    def post(self, request: Request) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        suppression = suppression_add(account=request_account(request), email=data["email"], topic=data.get("topic"))
        return Response(SuppressionSerializer(suppression).data, status=201)


class SuppressionView(ApiKeyView):
    key_scopes = {"DELETE": CHANGES}
    key_modes = {"DELETE": LIVE_ONLY}

    @extend_schema(
        summary="Remove a suppressed address",
        description=(
            "Takes the address's entry for every email off the list or, with `topic`, its entry for that topic, "
            "whatever added it: the account may email it again, unless its other entry stops that email. A provider "
            "that reported it may still refuse to send to it on its own list. The address is the rest of the path, "
            "whole: a `/` in it may be sent escaped (`%2F`) or not."
        ),
        parameters=[OpenApiParameter("topic", TOPIC_SCHEMA, description="The entry for this topic")],
        responses={
            200: inline_serializer(
                "SuppressionRemoved", {"email": serializers.CharField(), "message": serializers.CharField()}
            ),
            **error_responses(
                400,
                401,
                403,
                404,
                429,
                descriptions={
                    400: QUERY_REFUSED,
                    404: ErrorAnswer("The address has no such entry on the account's list.", SuppressionNotFound),
                },
            ),
        },
    )
    def delete(self, request: Request, email: str) -> Response:
        query = SuppressionQuery.of(request)
        suppression_remove(account=request_account(request), email=email, topic=query.validated_data.get("topic"))
        return Response({"email": normalized_address(email), "message": REMOVED_MESSAGE})
