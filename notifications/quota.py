"""Which jobs take a unit of their account's monthly quota, and which owe it (docs/rules.md, "Quota")."""

from __future__ import annotations

from notifications.models import Job, JobType


def counts_against_quota(job: Job) -> bool:
    """Whether the job takes a unit of its account's quota: a test job never does (docs/rules.md, "Limits")."""
    return not job.test and (job.type == JobType.WEBHOOK or job.account.limits.quota_counts_email)


def owes_unit(job: Job) -> bool:
    """Whether Retry Job must take the job's unit before it sends it again: it counts and took none when it was
    stored (docs/rules.md, "Retry Job")."""
    return not job.quota_taken and counts_against_quota(job)
