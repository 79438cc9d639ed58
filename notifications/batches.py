"""Batches of sends: up to BATCH_MAX_ITEMS jobs of one account accepted in one request (docs/rules.md, "Batches").

Each item is checked alone, by the single send's serializer and rules, and keeps its refusal in its slot. The jobs
of the others are stored together: one read of their idempotency keys, one of their addresses on the suppression
list, one transaction with one multi-row INSERT and the quota's units for all of them. The jobs are stored due at
once, and one task asks the dispatcher to send theirs once the transaction commits: the request publishes one task,
not one per job (docs/delivery-engine.md, "The dispatcher").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias
from uuid import UUID

from django.db import IntegrityError

from accounts.models import Account
from core.errors import CodedError, DuplicateRequest
from notifications.engine import store
from notifications.models import Job, JobType
from notifications.selectors import idempotency_keys_taken
from notifications.services import email_recipients, jobs_store_together, recipients_suppressed
from suppressions.selectors import suppression_reasons
from suppressions.services import suppressed_message

BATCH_MAX_ITEMS = 100
# A batch whose INSERT meets a key a concurrent send took checks its keys again, at most this many times in all.
KEY_CHECKS = 3

# An item's slot: its new job, or why it is refused.
Slot: TypeAlias = Job | CodedError


def batch_store(*, account: Account, slots: Sequence[Slot], test: bool = False) -> list[Slot]:
    """Stores the jobs among ``slots``, the batch's items in request order, all of mode ``test``, and queues them
    once committed.

    Returns the slots as answered: a job whose idempotency key an earlier job, or an earlier item, holds is
    refused in its slot with DuplicateRequest, as its single send would be. Raises the account's QuotaExceeded,
    storing nothing, when its quota cannot cover every job that spends a unit, the suppressed addresses' too.
    """
    arrivals = _arrival_failures(account, [slot for slot in slots if isinstance(slot, Job)])
    for _ in range(KEY_CHECKS):
        answered = _duplicates_refused(account, slots, test=test)
        jobs = [slot for slot in answered if isinstance(slot, Job)]
        try:
            jobs_store_together(jobs, arrivals=[arrivals[job.id] for job in jobs if job.id in arrivals])
        except IntegrityError:
            if not any(job.idempotency_key for job in jobs):
                raise
            continue  # a concurrent send took one of the keys after they were read
        return answered
    raise DuplicateRequest()


def _duplicates_refused(account: Account, slots: Sequence[Slot], *, test: bool) -> list[Slot]:
    """The slots with each job whose key is taken, by a stored job of the mode or an earlier item, refused."""
    keys = {slot.idempotency_key for slot in slots if isinstance(slot, Job) and slot.idempotency_key}
    taken = idempotency_keys_taken(account=account, keys=keys, test=test)
    answered: list[Slot] = []
    for slot in slots:
        key = slot.idempotency_key if isinstance(slot, Job) else None
        if key in taken:
            answered.append(DuplicateRequest())
            continue
        if key:
            taken.add(key)
        answered.append(slot)
    return answered


def _arrival_failures(account: Account, jobs: Sequence[Job]) -> dict[UUID, store.ArrivalFailure]:
    """The emails among ``jobs`` to addresses on the account's suppression list for their topics, by job id, failed on
    arrival; the others' listed cc and bcc noted skipped (recipients_suppressed). One read for every item's
    recipients and topics."""
    emails = [job for job in jobs if job.type == JobType.EMAIL]
    recipients = [address for job in emails for address in email_recipients(job.payload)]
    topics = {job.topic for job in emails if job.topic}
    listed = suppression_reasons(account_id=account.pk, emails=recipients, topics=topics)
    return {
        job.id: store.ArrivalFailure.of(job, error=suppressed_message(reason))
        for job in emails
        if (reason := recipients_suppressed(job, listed))
    }
