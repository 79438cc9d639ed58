"""Apps and their endpoints over the API: create, list, read, change, delete, and an endpoint's secret
(docs/customer-webhooks.md)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.access import ANY_MODE, CHANGES, LIVE_ONLY, READS, ApiKeyView
from accounts.authentication import request_account
from core.api.pages import PageQuery, page_parameters
from core.api.schema import BODY_REFUSALS, QUERY_REFUSED, ErrorAnswer, error_responses
from core.errors import AppNotFound, AppUidTaken, EndpointLimit, EndpointNotFound
from customer_webhooks.models import ENDPOINTS_PER_APP, Endpoint
from customer_webhooks.portal import portal_link_create, portal_links_revoke
from customer_webhooks.selectors import app_get, app_list, endpoint_get, endpoint_list
from customer_webhooks.serializers import (
    EVENT_TYPE_RULE,
    EVENT_TYPES_MAX,
    AppCreateRequestSerializer,
    AppPageSerializer,
    AppSerializer,
    AppUpdateRequestSerializer,
    EndpointCreateRequestSerializer,
    EndpointListSerializer,
    EndpointSecretSerializer,
    EndpointSerializer,
    EndpointUpdateRequestSerializer,
    PortalLinkSerializer,
    PortalRequestSerializer,
    PortalRevokedSerializer,
)
from customer_webhooks.services import (
    app_create,
    app_delete,
    app_update,
    endpoint_create,
    endpoint_delete,
    endpoint_secret_reveal,
    endpoint_secret_rotate,
    endpoint_update,
)

APP_DELETED_MESSAGE = "App deleted"
ENDPOINT_DELETED_MESSAGE = "Endpoint deleted"
APP_NOT_FOUND = ErrorAnswer("No app of this id or uid in the account.", AppNotFound)
ENDPOINT_NOT_FOUND = ErrorAnswer(
    "No app of this id or uid in the account, or no endpoint of this id in the app.", AppNotFound, EndpointNotFound
)
UID_TAKEN = ErrorAnswer("Another app of the account has this uid.", AppUidTaken)
APP_REFUSED = ErrorAnswer(
    "The body holds a field the operation does not take, or breaks a rule (the message names the field): `uid` "
    "1 to 64 of A-Z, a-z, 0-9, `.`, `_`, `:` and `-`, never shaped like a UUID; `name` 1 to 200 characters on one "
    "line.",
    *BODY_REFUSALS,
)
ENDPOINT_REFUSED = ErrorAnswer(
    "The body holds a field the operation does not take, or breaks a rule (the message names the field): `url` not "
    "an HTTPS URL or pointing to a local or private address, `eventTypes` not a list of distinct event types, "
    "`rateLimit` not a whole number from 1 to 1000.",
    *BODY_REFUSALS,
)
BODY_ERRORS = (400, 401, 403, 411, 413, 415, 429)
ENDPOINT_TEXT = (
    f"`eventTypes`: the types it receives, at most {EVENT_TYPES_MAX}, each {EVENT_TYPE_RULE} (`invoice.paid`); "
    "empty or absent: every type. `rateLimit`: at most this many deliveries a second reach it, the others wait their "
    "turn; null or absent: no limit. A URL's `user:password` is kept apart and shown as `***`."
)


def _endpoint_of(request: Request, app: str, endpoint_id: str) -> Endpoint:
    return endpoint_get(app=app_get(account=request_account(request), app=app), endpoint_id=endpoint_id)


class AppsView(ApiKeyView):
    key_scopes = {"GET": READS, "POST": CHANGES}
    # A test message goes to the live apps' endpoints, so a test key reads them; only a live key changes them.
    key_modes = {"GET": ANY_MODE, "POST": LIVE_ONLY}

    @extend_schema(
        operation_id="apps_list",
        summary="List apps",
        description="A page of the account's apps, newest first.",
        parameters=[*page_parameters("Apps")],
        responses={200: AppPageSerializer, **error_responses(400, 401, 403, 429, descriptions={400: QUERY_REFUSED})},
    )
    def get(self, request: Request) -> Response:
        page = PageQuery.of(request).asked_page
        apps, total = app_list(account=request_account(request), page=page.number, limit=page.limit)
        return Response(AppPageSerializer({"data": apps, "pagination": page.pagination(total)}).data)

    @extend_schema(
        summary="Create an app",
        description=(
            "An app per customer of yours, holding that customer's endpoints. `uid`, your own id for the customer, "
            "is unique in the account and may be used wherever the app's id is."
        ),
        request=AppCreateRequestSerializer,
        responses={
            201: AppSerializer,
            **error_responses(*BODY_ERRORS, 409, descriptions={400: APP_REFUSED, 409: UID_TAKEN}),
        },
    )
    def post(self, request: Request) -> Response:
        serializer = AppCreateRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        app = app_create(account=request_account(request), **serializer.validated_data)
        return Response(AppSerializer(app).data, status=201)


class AppView(ApiKeyView):
    key_scopes = {"GET": READS, "PATCH": CHANGES, "DELETE": CHANGES}
    key_modes = {"GET": ANY_MODE, "PATCH": LIVE_ONLY, "DELETE": LIVE_ONLY}

    @extend_schema(
        summary="Get an app",
        description="The app by its id or uid.",
        responses={200: AppSerializer, **error_responses(400, 401, 403, 404, 429, descriptions={404: APP_NOT_FOUND})},
    )
    def get(self, request: Request, app: str) -> Response:
        return Response(AppSerializer(app_get(account=request_account(request), app=app)).data)

    @extend_schema(
        summary="Change an app",
        description="Renames the app or gives it another uid; a field left out stays as it is.",
        request=AppUpdateRequestSerializer,
        responses={
            200: AppSerializer,
            **error_responses(
                *BODY_ERRORS, 404, 409, descriptions={400: APP_REFUSED, 404: APP_NOT_FOUND, 409: UID_TAKEN}
            ),
        },
    )
    def patch(self, request: Request, app: str) -> Response:
        serializer = AppUpdateRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        found = app_get(account=request_account(request), app=app)
        return Response(AppSerializer(app_update(app=found, **serializer.validated_data)).data)

    @extend_schema(
        summary="Delete an app",
        description=(
            "Deletes the app with its endpoints, its messages and their deliveries, those being retried included."
        ),
        responses={
            200: inline_serializer(
                "AppDeleted",
                {
                    "id": serializers.UUIDField(),
                    "uid": serializers.CharField(allow_null=True),
                    "message": serializers.CharField(),
                },
            ),
            **error_responses(400, 401, 403, 404, 429, descriptions={404: APP_NOT_FOUND}),
        },
    )
    def delete(self, request: Request, app: str) -> Response:
        found = app_get(account=request_account(request), app=app)
        deleted = {"id": str(found.id), "uid": found.uid, "message": APP_DELETED_MESSAGE}
        app_delete(found)
        return Response(deleted)


class EndpointsView(ApiKeyView):
    key_scopes = {"GET": READS, "POST": CHANGES}
    key_modes = {"GET": ANY_MODE, "POST": LIVE_ONLY}

    @extend_schema(
        operation_id="apps_endpoints_list",
        summary="List an app's endpoints",
        description="The app's endpoints, oldest first.",
        responses={
            200: EndpointListSerializer,
            **error_responses(400, 401, 403, 404, 429, descriptions={404: APP_NOT_FOUND}),
        },
    )
    def get(self, request: Request, app: str) -> Response:
        endpoints = endpoint_list(app=app_get(account=request_account(request), app=app))
        return Response(EndpointListSerializer({"data": endpoints}).data)

    @extend_schema(
        summary="Add an endpoint to an app",
        description=(
            "Each message to the app of a type the endpoint takes is POSTed to `url`, signed with the endpoint's own "
            f"secret (Get an endpoint's secret). {ENDPOINT_TEXT} At most {ENDPOINTS_PER_APP} endpoints per app."
        ),
        request=EndpointCreateRequestSerializer,
        responses={
            201: EndpointSerializer,
            **error_responses(
                *BODY_ERRORS,
                404,
                409,
                descriptions={
                    400: ENDPOINT_REFUSED,
                    404: APP_NOT_FOUND,
                    409: ErrorAnswer(f"The app has {ENDPOINTS_PER_APP} endpoints already.", EndpointLimit),
                },
            ),
        },
    )
    def post(self, request: Request, app: str) -> Response:
        serializer = EndpointCreateRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        found = app_get(account=request_account(request), app=app)
        endpoint = endpoint_create(app=found, **serializer.validated_data)
        return Response(EndpointSerializer(endpoint).data, status=201)


class EndpointView(ApiKeyView):
    key_scopes = {"GET": READS, "PATCH": CHANGES, "DELETE": CHANGES}
    key_modes = {"GET": ANY_MODE, "PATCH": LIVE_ONLY, "DELETE": LIVE_ONLY}

    @extend_schema(
        summary="Get an endpoint",
        description="One endpoint of the app, without its secret.",
        responses={
            200: EndpointSerializer,
            **error_responses(400, 401, 403, 404, 429, descriptions={404: ENDPOINT_NOT_FOUND}),
        },
    )
    def get(self, request: Request, app: str, endpoint_id: str) -> Response:
        return Response(EndpointSerializer(_endpoint_of(request, app, endpoint_id)).data)

    @extend_schema(
        summary="Change an endpoint",
        description=(
            f"Changes what the body gives; a field left out stays as it is. {ENDPOINT_TEXT} `disabled`: true stops "
            "its deliveries until it is set to false again, which also starts it afresh after NotifyHub disabled it."
        ),
        request=EndpointUpdateRequestSerializer,
        responses={
            200: EndpointSerializer,
            **error_responses(*BODY_ERRORS, 404, descriptions={400: ENDPOINT_REFUSED, 404: ENDPOINT_NOT_FOUND}),
        },
    )
    def patch(self, request: Request, app: str, endpoint_id: str) -> Response:
        serializer = EndpointUpdateRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        endpoint = _endpoint_of(request, app, endpoint_id)
        return Response(EndpointSerializer(endpoint_update(endpoint=endpoint, changes=serializer.validated_data)).data)

    @extend_schema(
        summary="Delete an endpoint",
        description="Deletes the endpoint with its deliveries, those being retried included.",
        responses={
            200: inline_serializer(
                "EndpointDeleted", {"id": serializers.UUIDField(), "message": serializers.CharField()}
            ),
            **error_responses(400, 401, 403, 404, 429, descriptions={404: ENDPOINT_NOT_FOUND}),
        },
    )
    def delete(self, request: Request, app: str, endpoint_id: str) -> Response:
        endpoint = _endpoint_of(request, app, endpoint_id)
        deleted = {"id": str(endpoint.id), "message": ENDPOINT_DELETED_MESSAGE}  # delete() takes the instance's id
        endpoint_delete(endpoint)
        return Response(deleted)


class EndpointSecretView(ApiKeyView):
    # The secret lets its reader sign as NotifyHub does: only a live key of scope `full` reads it.
    key_scopes = {"GET": CHANGES}
    key_modes = {"GET": LIVE_ONLY}

    @extend_schema(
        summary="Get an endpoint's secret",
        description=(
            "The secret that signs the endpoint's deliveries: `whsec_` and base64, the form Standard Webhooks' "
            "libraries take. Hand it to the endpoint's owner, who verifies each delivery with it. Each read is "
            "recorded in the account's audit log (`endpoint.secret_revealed`)."
        ),
        responses={
            200: EndpointSecretSerializer,
            **error_responses(400, 401, 403, 404, 429, descriptions={404: ENDPOINT_NOT_FOUND}),
        },
    )
    def get(self, request: Request, app: str, endpoint_id: str) -> Response:
        secret = endpoint_secret_reveal(_endpoint_of(request, app, endpoint_id))
        return Response(EndpointSecretSerializer({"secret": secret}).data)


class EndpointSecretRotateView(ApiKeyView):
    key_scopes = {"POST": CHANGES}
    key_modes = {"POST": LIVE_ONLY}

    @extend_schema(
        summary="Rotate an endpoint's secret",
        description=(
            "Gives the endpoint a new secret, in the answer. The one it replaces keeps signing beside it for a while "
            "(a day unless the service is set otherwise; each delivery carries both signatures), so the endpoint's "
            "owner has time to take the new one."
        ),
        request=None,
        responses={
            200: EndpointSecretSerializer,
            **error_responses(400, 401, 403, 404, 411, 429, descriptions={404: ENDPOINT_NOT_FOUND}),
        },
    )
    def post(self, request: Request, app: str, endpoint_id: str) -> Response:
        secret = endpoint_secret_rotate(_endpoint_of(request, app, endpoint_id))
        return Response(EndpointSecretSerializer({"secret": secret}).data)


# The portal's operations take no field and act on an app: what they refuse.
PORTAL_REFUSALS = error_responses(
    *BODY_ERRORS,
    404,
    descriptions={
        400: ErrorAnswer("The body holds a field: the operation takes none.", *BODY_REFUSALS),
        404: APP_NOT_FOUND,
    },
)


class PortalLinkView(ApiKeyView):
    # The link opens the app's live endpoints and secrets to whoever holds it: a live key of scope `full` makes one.
    key_scopes = {"POST": CHANGES}
    key_modes = {"POST": LIVE_ONLY}

    @extend_schema(
        operation_id="apps_portal_create",
        summary="Make a consumer portal link",
        description=(
            "A link to hand the app's customer, who opens with it, with no account of their own, the app's pages: "
            "its endpoints (added, changed, disabled, deleted), each endpoint's secret (revealed, rotated), and the "
            "recent messages with each delivery's attempts. Nothing else of the account's is reachable from it. "
            "It works until `expiresAt` (an hour unless the service is set otherwise), and so does the session it "
            "opens; whoever holds it may use it until then, so hand it over as you would a password. The body may "
            "be left out or be `{}`."
        ),
        # It takes no field, so the document shows no body; one sent all the same must be `{}`.
        request=None,
        responses={201: PortalLinkSerializer, **PORTAL_REFUSALS},
    )
    def post(self, request: Request, app: str) -> Response:
        PortalRequestSerializer(data=request.data).is_valid(raise_exception=True)
        link = portal_link_create(app=app_get(account=request_account(request), app=app))
        return Response(PortalLinkSerializer(link).data, status=201)


class PortalRevokeView(ApiKeyView):
    # Who may open the app's portal may close it: a live key of scope `full`, as for a link.
    key_scopes = {"POST": CHANGES}
    key_modes = {"POST": LIVE_ONLY}

    @extend_schema(
        operation_id="apps_portal_revoke",
        summary="End the app's consumer portal links and sessions",
        description=(
            "Ends, before they expire, every consumer portal link made for the app until now and every session "
            "opened with one, for a link handed to the wrong person: such a link, or a page of such a session, "
            "answers that the link has expired and to ask for a new one. Links made afterwards work. `revokedAt` is "
            "the time they are ended at. The body may be left out or be `{}`."
        ),
        request=None,
        responses={200: PortalRevokedSerializer, **PORTAL_REFUSALS},
    )
    def post(self, request: Request, app: str) -> Response:
        PortalRequestSerializer(data=request.data).is_valid(raise_exception=True)
        revoked_at = portal_links_revoke(app=app_get(account=request_account(request), app=app))
        return Response(PortalRevokedSerializer({"revoked_at": revoked_at}).data)
