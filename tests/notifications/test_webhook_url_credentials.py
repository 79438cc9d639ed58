"""Credentials in a webhook URL are kept encrypted and shown as ***, yet still reach the receiver."""

from __future__ import annotations

import base64

import pytest
from django.test import Client as Browser

from core.crypto import decrypt
from notifications.models import Job, JobStatus
from tests.conftest import Client, wait_for_job
from tests.fakes.receiver import Receiver


def test_the_url_is_stored_and_shown_masked_and_the_credentials_encrypted(free: Client) -> None:
    response = free.send_webhook(url="https://hook-user:s3cr%40t@hooks.example.com:8443/in?x=1")

    job = Job.objects.get(id=response.json()["data"]["jobId"])
    assert job.payload["url"] == "https://***@hooks.example.com:8443/in?x=1"
    assert "s3cr" not in job.url_credentials  # type: ignore[operator]
    assert decrypt(job.url_credentials) == "hook-user:s3cr%40t"  # type: ignore[arg-type]
    shown = free.get(f"/api/v1/notifications/jobs/{job.id}").json()["data"]["payload"]
    assert shown["url"] == "https://***@hooks.example.com:8443/in?x=1"


def test_a_url_without_credentials_is_stored_as_sent(free: Client) -> None:
    response = free.send_webhook(url="https://hooks.example.com/in")

    job = Job.objects.get(id=response.json()["data"]["jobId"])
    assert (job.payload["url"], job.url_credentials) == ("https://hooks.example.com/in", None)


def test_staff_never_see_the_credentials(free: Client, django_user_model: type) -> None:
    job_id = free.send_webhook(url="https://hook-user:s3cr3t@hooks.example.com/in").json()["data"]["jobId"]
    staff = django_user_model.objects.create_superuser("ops-creds@notifyhub.local", "ops-creds@notifyhub.local", "pw")  # type: ignore[attr-defined]
    browser = Browser()
    browser.force_login(staff)

    page = browser.get(f"/admin/notifications/job/{job_id}/change/").content.decode()

    assert "https://***@hooks.example.com/in" in page
    assert "s3cr3t" not in page
    assert Job.objects.get(id=job_id).url_credentials not in page


@pytest.mark.usefixtures("worker")
def test_the_receiver_gets_the_credentials_as_basic_auth(free: Client, receiver: Receiver) -> None:
    url = receiver.url("/hook").replace("https://", "https://hook-user:s3cr3t@")
    job_id = free.send_webhook(url=url).json()["data"]["jobId"]

    job = wait_for_job(job_id)

    (arrival,) = receiver.wait_for(1)
    assert job.status == JobStatus.COMPLETED
    assert arrival.headers["Authorization"] == "Basic " + base64.b64encode(b"hook-user:s3cr3t").decode()
