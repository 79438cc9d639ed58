"""An address suppressed while its email job waits in the queue: the attempt fails without a provider call.

A module of its own: no worker runs here, so the test's own claim is the only one (docs/suppressions.md).
"""

from __future__ import annotations

from uuid import UUID

import pytest

from notifications.engine.processing import job_process
from notifications.models import DeliveryLog, Job, JobStatus
from tests.conftest import Client, ready_to_send
from tests.fakes.providers import FakeSendGrid
from tests.suppressions.test_suppressed_sends import accepted


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("delivery_settings")
def test_an_address_suppressed_while_its_job_waits_fails_at_the_attempt_without_a_provider_call(
    holder: Client, sendgrid: FakeSendGrid
) -> None:
    ready_to_send(holder, "SENDGRID")
    job_id = accepted(holder.send_email(to="ada@example.com"))
    assert holder.post("/api/v1/suppressions", {"email": "Ada@example.com"}).status_code == 201

    job_process(job_id=UUID(job_id))

    job = Job.objects.get(id=job_id)
    assert (job.status, job.error_message) == (JobStatus.FAILED, "Recipient is on the suppression list (MANUAL)")
    log = DeliveryLog.objects.get(job=job)
    assert (log.status, log.used_provider) == ("failed", None)
    assert sendgrid.accepted == []
