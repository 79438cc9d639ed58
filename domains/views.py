from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_serializer, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.access import CHANGES, LIVE_ONLY, READS, AccountHolderView
from accounts.authentication import request_account
from core.api.fields import DomainNameField, IsoDateTimeField
from core.api.schema import (
    BODY_REFUSALS,
    SESSION_ERROR_DESCRIPTIONS,
    SESSION_REFUSALS,
    ErrorAnswer,
    Link,
    error_responses,
    response_links,
)
from core.api.serializers import BodySerializer
from core.errors import (
    DomainExists,
    DomainNeedsProviderKey,
    DomainNotFound,
    DomainRegistrationFailed,
    DomainsNeedPaidPlan,
    EmailUnconfirmed,
    NoProviderCanRegister,
)
from domains.models import SenderDomain
from domains.selectors import domain_require
from domains.services import domain_delete, domain_request, domain_verify


class WarningSerializer(serializers.Serializer):
    provider = serializers.CharField()
    reason = serializers.CharField()


class DnsRecordSerializer(serializers.Serializer):
    provider = serializers.CharField()
    type = serializers.CharField()
    host = serializers.CharField()
    value = serializers.CharField()
    priority = serializers.IntegerField(required=False)


class ProviderStatusSerializer(serializers.Serializer):
    provider = serializers.CharField()
    verified = serializers.BooleanField()
    error = serializers.CharField(source="last_error", allow_null=True)


class DomainSerializer(serializers.Serializer):
    domain = serializers.CharField(source="name")
    sendingDomain = serializers.CharField(source="sending_name")
    status = serializers.CharField()
    records = serializers.SerializerMethodField()
    providers = ProviderStatusSerializer(source="registrations.all", many=True)
    warnings = WarningSerializer(many=True)
    createdAt = IsoDateTimeField(source="created_at")
    verifiedAt = IsoDateTimeField(source="verified_at", allow_null=True)

    @staticmethod
    def get_records(domain: SenderDomain) -> list[dict[str, Any]]:
        return [record for registration in domain.registrations.all() for record in registration.records]


NO_DOMAIN = ErrorAnswer("The account has no sender domain; request one first.", DomainNotFound)

# What may follow a sender domain's answer (OpenAPI links): the account has one domain, so no parameter names it.
GET_DOMAIN = Link("GetDomain", "user_domain_retrieve", "The domain, its DNS records and each provider's status.")
VERIFY_DOMAIN = Link("VerifyDomain", "user_domain_verify_create", "Ask every provider to check the DNS records.")
DELETE_DOMAIN = Link("DeleteDomain", "user_domain_destroy", "Remove the domain here and at every provider.")


def domain_data(domain: SenderDomain) -> dict[str, Any]:
    data = DomainSerializer(domain).data
    for provider in data["providers"]:
        provider["error"] = provider["error"] or None
    return data


class DomainRequestView(AccountHolderView):
    key_scopes = {"POST": CHANGES}
    key_modes = {"POST": LIVE_ONLY}

    @extend_schema_serializer(component_name="DomainRequest")
    class InputSerializer(BodySerializer):
        domain = DomainNameField()

    @extend_schema(
        summary="Register your sending domain with every configured provider",
        description=(
            "Registers `em.<domain>` with every provider the account has a key for, all or nothing, and answers "
            "the DNS records to create. A provider that cannot take part is named in `warnings`. Paid plans only; "
            "an account has one sender domain at a time."
        ),
        request=InputSerializer,
        extensions=response_links(201, GET_DOMAIN, VERIFY_DOMAIN, DELETE_DOMAIN),
        responses={
            201: DomainSerializer,
            **error_responses(
                400,
                401,
                403,
                409,
                411,
                413,
                415,
                429,
                502,
                descriptions={
                    **SESSION_ERROR_DESCRIPTIONS,
                    400: ErrorAnswer(
                        "The body holds a field the operation does not take or breaks a rule (the message names "
                        "it), the account has no provider key that can register a domain, or the API key was sent "
                        "in both headers.",
                        *BODY_REFUSALS,
                        DomainNeedsProviderKey,
                        NoProviderCanRegister,
                    ),
                    403: ErrorAnswer(
                        "The plan has no sender domains, the account's email address is not confirmed yet, the "
                        "account is inactive or deleted, or the signed-in user has no NotifyHub account. With a "
                        "session, the request also needs the CSRF token.",
                        DomainsNeedPaidPlan,
                        EmailUnconfirmed,
                        *SESSION_REFUSALS,
                    ),
                    409: ErrorAnswer("The account has a sender domain already; delete it first.", DomainExists),
                    502: ErrorAnswer(
                        "A provider refused the registration or could not be reached; nothing was registered.",
                        DomainRegistrationFailed,
                    ),
                },
            ),
        },
    )
    def post(self, request: Request) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        domain = domain_request(account=request_account(request), name=serializer.validated_data["domain"])
        return Response(domain_data(domain), status=201)


class DomainView(AccountHolderView):
    key_scopes = {"GET": READS, "DELETE": CHANGES}
    key_modes = {"GET": LIVE_ONLY, "DELETE": LIVE_ONLY}

    @extend_schema(
        summary="Your sending domain, its DNS records and status",
        description="The account's sender domain, the DNS records each provider needs, and each provider's status.",
        extensions=response_links(200, VERIFY_DOMAIN, DELETE_DOMAIN),
        responses={
            200: DomainSerializer,
            **error_responses(400, 401, 403, 404, 429, descriptions={**SESSION_ERROR_DESCRIPTIONS, 404: NO_DOMAIN}),
        },
    )
    def get(self, request: Request) -> Response:
        return Response(domain_data(domain_require(account=request_account(request))))

    @extend_schema(
        summary="Remove your sending domain here and at every provider",
        description="Removes the domain at every provider, then here; a provider that refused is named in `warnings`.",
        responses={
            200: inline_serializer(
                "DomainDeleted", {"deleted": serializers.BooleanField(), "warnings": WarningSerializer(many=True)}
            ),
            **error_responses(400, 401, 403, 404, 429, descriptions={**SESSION_ERROR_DESCRIPTIONS, 404: NO_DOMAIN}),
        },
    )
    def delete(self, request: Request) -> Response:
        warnings = domain_delete(account=request_account(request))
        return Response({"deleted": True, "warnings": warnings})


# GET /api/v1/user/domain under the name the dashboard's scripts use; nothing else.
class DomainStatusView(DomainView):
    http_method_names = ["get", "head", "options"]


class DomainVerifyView(AccountHolderView):
    key_scopes = {"POST": CHANGES}
    key_modes = {"POST": LIVE_ONLY}

    @extend_schema(
        summary="Ask every provider to verify the DNS records",
        description=(
            "Asks every provider the account has a key for to check the DNS records. The domain is verified once "
            "all of them confirm; a provider that does not keeps it pending, with its reason in `providers`."
        ),
        request=None,
        extensions=response_links(200, GET_DOMAIN, DELETE_DOMAIN),
        responses={
            200: DomainSerializer,
            **error_responses(
                400, 401, 403, 404, 411, 429, descriptions={**SESSION_ERROR_DESCRIPTIONS, 404: NO_DOMAIN}
            ),
        },
    )
    def post(self, request: Request) -> Response:
        domain = domain_verify(account=request_account(request))
        return Response(domain_data(domain))
