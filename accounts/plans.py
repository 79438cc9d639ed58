"""Plans and their limits (docs/rules.md, "Limits")."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import models


class Plan(models.TextChoices):
    FREE = "free", "Free"
    INDIE = "indie", "Indie"
    STARTUP = "startup", "Startup"


@dataclass(frozen=True)
class PlanLimits:
    requests_per_minute: int
    monthly_quota: int
    # Free counts every notification; paid plans count webhooks only.
    quota_counts_email: bool

    @property
    def is_paid(self) -> bool:
        return not self.quota_counts_email


PLAN_LIMITS: dict[str, PlanLimits] = {
    Plan.FREE: PlanLimits(requests_per_minute=5, monthly_quota=100, quota_counts_email=True),
    Plan.INDIE: PlanLimits(requests_per_minute=50, monthly_quota=4_000, quota_counts_email=False),
    Plan.STARTUP: PlanLimits(requests_per_minute=200, monthly_quota=15_000, quota_counts_email=False),
}


def limits_for(plan: str) -> PlanLimits:
    return PLAN_LIMITS[plan]
