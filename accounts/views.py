"""The endpoints of the account itself: checking a key, this period's usage, and the audit log."""

from __future__ import annotations

from datetime import UTC, datetime

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.access import ANY_KEY, ANY_MODE, LIVE_ONLY, READS, AccountHolderView, ApiKeyView
from accounts.authentication import request_account
from accounts.plans import Plan
from accounts.selectors import audit_list, usage_get
from accounts.serializers import AuditPageSerializer
from core.api.envelope import iso_utc
from core.api.fields import OneOfField
from core.api.pages import PageQuery, page_parameters
from core.api.schema import QUERY_REFUSED, SESSION_ERROR_DESCRIPTIONS, error_responses


class PingView(ApiKeyView):
    key_scopes = {"GET": ANY_KEY}
    key_modes = {"GET": ANY_MODE}

    @extend_schema(
        summary="Check an API key",
        description="Answers `pong` when the API key is valid and its account active.",
        responses={
            200: inline_serializer(
                "Pong", {"message": serializers.CharField(), "timestamp": serializers.DateTimeField()}
            ),
            **error_responses(400, 401, 403, 429),
        },
    )
    def get(self, request: Request) -> Response:
        return Response({"message": "pong", "timestamp": iso_utc(datetime.now(UTC))})


class UsageView(AccountHolderView):
    key_scopes = {"GET": READS}
    key_modes = {"GET": LIVE_ONLY}

    @extend_schema(
        summary="This billing period's usage (dashboard session or API key)",
        description=(
            "The notifications counted against the plan's monthly quota so far (Free: emails and webhooks; "
            "paid plans: webhooks, as their emails are unlimited and uncounted), the quota, and the period's dates."
        ),
        responses={
            200: inline_serializer(
                "Usage",
                {
                    "plan": OneOfField(choices=Plan.values),
                    "used": serializers.IntegerField(),
                    "limit": serializers.IntegerField(allow_null=True),
                    "periodStart": serializers.DateField(),
                    "resetsOn": serializers.DateField(),
                },
            ),
            **error_responses(400, 401, 403, 429, descriptions=SESSION_ERROR_DESCRIPTIONS),
        },
    )
    def get(self, request: Request) -> Response:
        usage = usage_get(account=request_account(request))
        return Response(
            {
                "plan": usage.plan,
                "used": usage.used,
                "limit": usage.limit,
                "periodStart": usage.period_start.isoformat(),
                "resetsOn": usage.resets_on.isoformat(),
            }
        )


class AuditView(AccountHolderView):
    key_scopes = {"GET": READS}
    key_modes = {"GET": LIVE_ONLY}

    @extend_schema(
        summary="Your account's audit log, newest first (dashboard session or API key)",
        description=(
            "A page of the changes made to the account, newest first: what changed (`action`), who changed it "
            "(`actor`: `holder` for the account holder, through the dashboard or an API key; `staff:<username>` for "
            "NotifyHub's staff; `operator` for an operator's command), the API key it was made with (`apiKey`: its "
            "`name` and `mode`; null for the dashboard, staff and operators), what it changed (`target`: a key's "
            "name, a provider, a domain, an endpoint's origin, an address, a plan or a limit; empty for the signing "
            "secret and the account itself), the client's address (`ip`, null for an operator's change) and when. An "
            "entry never holds a key, a secret, a token or a password."
        ),
        parameters=[*page_parameters("Entries")],
        responses={
            200: AuditPageSerializer,
            **error_responses(400, 401, 403, 429, descriptions={**SESSION_ERROR_DESCRIPTIONS, 400: QUERY_REFUSED}),
        },
    )
    def get(self, request: Request) -> Response:
        page = PageQuery.of(request).asked_page
        entries, total = audit_list(account=request_account(request), page=page.number, limit=page.limit)
        return Response(AuditPageSerializer({"data": entries, "pagination": page.pagination(total)}).data)
