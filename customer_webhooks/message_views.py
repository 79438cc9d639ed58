"""Messages over the API: send one to an app, list and read them, recover an endpoint's failed deliveries
(docs/customer-webhooks.md, "Messages")."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.access import ANY_MODE, CHANGES, READS, SENDS, ApiKeyView
from accounts.authentication import request_account, request_in_test_mode
from core.api.pages import page_parameters
from core.api.schema import BODY_REFUSALS, QUERY_REFUSED, ErrorAnswer, error_responses
from core.errors import AccountInactive, AppNotFound, DuplicateRequest, EndpointNotFound, MessageNotFound, QuotaExceeded
from customer_webhooks.message_serializers import (
    EndpointRecoveredSerializer,
    EndpointRecoverRequestSerializer,
    MessageAcceptedSerializer,
    MessageDetailSerializer,
    MessageListQuery,
    MessagePageSerializer,
    MessageRequestSerializer,
    message_accepted,
)
from customer_webhooks.messages import endpoint_recover, message_get, message_list, message_send
from customer_webhooks.models import ENDPOINTS_PER_APP
from customer_webhooks.selectors import app_get, app_get_with_enabled_endpoints, endpoint_get
from customer_webhooks.serializers import EVENT_TYPE_SCHEMA

APP_NOT_FOUND = ErrorAnswer("No app of this id or uid in the account.", AppNotFound)
MODE_TEXT = (
    "A test key's message is a test message: its deliveries are test jobs, which send nothing and spend no quota, and "
    "only test keys see it; a live key sees live messages only."
)


class MessagesView(ApiKeyView):
    key_scopes = {"GET": READS, "POST": SENDS}
    key_modes = {"GET": ANY_MODE, "POST": ANY_MODE}

    @extend_schema(
        operation_id="apps_messages_list",
        summary="List an app's messages, newest first",
        description=f"A page of the app's messages, without their payloads; `eventType` keeps one type's. {MODE_TEXT}",
        parameters=[
            *page_parameters("Messages"),
            OpenApiParameter("eventType", EVENT_TYPE_SCHEMA, description="Only messages of this event type"),
        ],
        responses={
            200: MessagePageSerializer,
            **error_responses(400, 401, 403, 404, 429, descriptions={400: QUERY_REFUSED, 404: APP_NOT_FOUND}),
        },
    )
    def get(self, request: Request, app: str) -> Response:
        query = MessageListQuery.of(request)
        page = query.asked_page
        messages, total = message_list(
            app=app_get(account=request_account(request), app=app),
            test=request_in_test_mode(request),
            event_type=query.validated_data.get("eventType"),
            page=page.number,
            limit=page.limit,
        )
        return Response(MessagePageSerializer({"data": messages, "pagination": page.pagination(total)}).data)

    @extend_schema(
        operation_id="apps_messages_create",
        summary="Send a message to an app",
        description=(
            "Queues one webhook delivery of `payload` (a JSON object of at most 64 KB) to each enabled endpoint of "
            f"the app that receives `eventType` (an app has at most {ENDPOINTS_PER_APP}): each is a webhook job "
            "(Get job status, the jobs list and Retry Job see it) whose body is `payload` exactly, with `webhook-id` "
            "and `X-Webhook-Id` the message's id on every endpoint and attempt, signed with that endpoint's own "
            "secret, and retried for about 27 hours. The deliveries are stored together, all or none: each takes a "
            "unit of the monthly quota, and the quota must cover them all or nothing is stored. A message no "
            "endpoint receives is accepted with no deliveries and spends nothing. The message is one request against "
            f"the rate limit; an `idempotencyKey` the account's messages hold already is 409. {MODE_TEXT}"
        ),
        request=MessageRequestSerializer,
        responses={
            202: MessageAcceptedSerializer,
            **error_responses(
                400,
                401,
                403,
                404,
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
                    403: ErrorAnswer(
                        "The account is inactive, or its monthly quota cannot cover every delivery.",
                        AccountInactive,
                        QuotaExceeded,
                    ),
                    404: APP_NOT_FOUND,
                    409: ErrorAnswer(
                        "A message of the account holds this `idempotencyKey` already; nothing is stored.",
                        DuplicateRequest,
                    ),
                },
            ),
        },
    )
    def post(self, request: Request, app: str) -> Response:
        serializer = MessageRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        account, data = request_account(request), serializer.validated_data
        found, enabled_endpoints = app_get_with_enabled_endpoints(account=account, app=app)
        sent = message_send(
            account=account,
            app=found,
            enabled_endpoints=enabled_endpoints,
            event_type=data["eventType"],
            payload=data["payload"],
            idempotency_key=data.get("idempotencyKey"),
            test=request_in_test_mode(request),
        )
        return Response(message_accepted(sent), status=202)


class MessageView(ApiKeyView):
    key_scopes = {"GET": READS}
    key_modes = {"GET": ANY_MODE}

    @extend_schema(
        operation_id="apps_messages_retrieve",
        summary="Get a message and its deliveries",
        description=(
            "The message with its payload and each delivery: the endpoint, its job (Get job status shows the job's "
            f"attempts one by one), the job's status, attempts and next attempt. {MODE_TEXT}"
        ),
        responses={
            200: MessageDetailSerializer,
            **error_responses(
                400,
                401,
                403,
                404,
                429,
                descriptions={
                    404: ErrorAnswer(
                        "No app of this id or uid in the account, or no message of this id in the app among the "
                        "caller's mode's.",
                        AppNotFound,
                        MessageNotFound,
                    )
                },
            ),
        },
    )
    def get(self, request: Request, app: str, message_id: str) -> Response:
        message = message_get(
            app=app_get(account=request_account(request), app=app),
            message_id=message_id,
            test=request_in_test_mode(request),
        )
        return Response(MessageDetailSerializer(message).data)


class EndpointRecoverView(ApiKeyView):
    key_scopes = {"POST": CHANGES}
    key_modes = {"POST": ANY_MODE}

    @extend_schema(
        operation_id="apps_endpoints_recover_create",
        summary="Re-queue an endpoint's failed deliveries",
        description=(
            "Re-queues every delivery to the endpoint that failed and was created since `since` (an RFC 3339 "
            "date-time, not in the future and not older than the jobs are kept), as Retry Job re-queues each one: "
            "its attempts start again and its logs stay. A test key re-queues test deliveries, a live key live ones. "
            "A recovery that re-queues any is recorded in the account's audit log (`endpoint.recovered`)."
        ),
        request=EndpointRecoverRequestSerializer,
        responses={
            202: EndpointRecoveredSerializer,
            **error_responses(
                400,
                401,
                403,
                404,
                411,
                413,
                415,
                429,
                descriptions={
                    400: ErrorAnswer(
                        "The body holds a field the operation does not take, `since` is not a date-time, is in the "
                        "future or older than the jobs are kept, the body is not a JSON object, or the API key was "
                        "sent in both headers.",
                        *BODY_REFUSALS,
                    ),
                    404: ErrorAnswer(
                        "No app of this id or uid in the account, or no endpoint of this id in the app.",
                        AppNotFound,
                        EndpointNotFound,
                    ),
                },
            ),
        },
    )
    def post(self, request: Request, app: str, endpoint_id: str) -> Response:
        serializer = EndpointRecoverRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        account = request_account(request)
        endpoint = endpoint_get(app=app_get(account=account, app=app), endpoint_id=endpoint_id)
        requeued = endpoint_recover(
            account=account,
            endpoint=endpoint,
            since=serializer.validated_data["since"],
            test=request_in_test_mode(request),
        )
        return Response({"requeued": requeued}, status=202)
