"""The dashboard's daily figures, as the API gives them."""

from __future__ import annotations

from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
    inline_serializer,
)
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.access import LIVE_ONLY, READS, AccountHolderView
from accounts.authentication import request_account
from core.api.fields import (
    PositiveIntegerParamField,
)
from core.api.schema import (
    QUERY_REFUSED,
    SESSION_ERROR_DESCRIPTIONS,
    error_responses,
)
from core.api.serializers import RequestSerializer
from notifications.selectors import daily_outcomes

DASHBOARD_PERIODS = [7, 30, 90]


class DashboardStatsView(AccountHolderView):
    key_scopes = {"GET": READS}
    key_modes = {"GET": LIVE_ONLY}

    class QuerySerializer(RequestSerializer):
        days = PositiveIntegerParamField(required=False)

        def validate_days(self, days: int) -> int:
            if days not in DASHBOARD_PERIODS:
                raise serializers.ValidationError("days must be one of 7, 30, 90")
            return days

    @extend_schema(
        summary="Completed and failed jobs per day (dashboard session or API key)",
        description=(
            "One entry per day of the period, oldest first, today (UTC) last: the jobs that completed and "
            "the jobs that failed for good that day; and the period's totals."
        ),
        parameters=[
            OpenApiParameter("days", int, enum=DASHBOARD_PERIODS, description="The period in days", default=30)
        ],
        responses={
            200: inline_serializer(
                "DashboardStats",
                {
                    "days": inline_serializer(
                        "DayOutcomes",
                        {
                            "date": serializers.DateField(),
                            "completed": serializers.IntegerField(),
                            "failed": serializers.IntegerField(),
                        },
                        many=True,
                    ),
                    "totals": inline_serializer(
                        "OutcomeTotals", {"completed": serializers.IntegerField(), "failed": serializers.IntegerField()}
                    ),
                },
            ),
            **error_responses(400, 401, 403, 429, descriptions={**SESSION_ERROR_DESCRIPTIONS, 400: QUERY_REFUSED}),
        },
    )
    def get(self, request: Request) -> Response:
        query = self.QuerySerializer.of(request)
        outcomes = daily_outcomes(account=request_account(request), days=query.validated_data.get("days", 30))
        return Response(
            {
                "days": [
                    {"date": day.day.isoformat(), "completed": day.completed, "failed": day.failed} for day in outcomes
                ],
                "totals": {
                    "completed": sum(day.completed for day in outcomes),
                    "failed": sum(day.failed for day in outcomes),
                },
            }
        )
