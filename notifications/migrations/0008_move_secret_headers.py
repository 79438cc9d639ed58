"""Moves the secret custom headers of the webhook jobs stored before 0007 out of their payload, encrypted into
``secret_headers``, as the accept path now stores them (notifications/secret_headers.py).

A batch per transaction, so delivering workers never wait long on a row this holds. Jobs already holding
``secret_headers`` are left alone, so a run that stopped is finished by running it again. A job a web process of
the previous release stored while this ran keeps its values in its payload: its delivery and its owner's API read
them there, as they read every job before this, and staff still see them masked (``job_payload_for_staff``).
Reversed, the values go back into the payloads, where the previous release reads them.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations, transaction

from notifications.secret_headers import split_secret_headers, with_secret_headers

BATCH_SIZE = 500
# Payloads are stored as compact JSON (core/model_fields.py): any job with a custom header contains this.
HAS_HEADERS = '"headers":{"'


def _in_batches(jobs: Any) -> Any:
    """``jobs`` a batch at a time in id order, each batch read as the previous one was written."""
    last_id = None
    while True:
        page = jobs.filter(id__gt=last_id) if last_id else jobs
        batch = list(page.order_by("id").only("id", "payload", "secret_headers")[:BATCH_SIZE])
        if not batch:
            return
        yield batch
        last_id = batch[-1].id


def _rewrite(jobs: Any, change: Any) -> None:
    """Applies ``change`` to each job of ``jobs``; a job it returns True for is saved, a batch per transaction."""
    for batch in _in_batches(jobs):
        changed = [job for job in batch if change(job)]
        with transaction.atomic():
            jobs.model.objects.bulk_update(changed, ["payload", "secret_headers"])


def _encrypt_secret_headers(job: Any) -> bool:
    job.payload["headers"], job.secret_headers = split_secret_headers(job.payload.get("headers") or {})
    return job.secret_headers is not None


def _decrypt_secret_headers(job: Any) -> bool:
    job.payload["headers"] = with_secret_headers(job.payload["headers"], job.secret_headers)
    job.secret_headers = None
    return True


def move_secret_headers(apps: Any, schema_editor: Any) -> None:
    Job = apps.get_model("notifications", "Job")
    stored_before = Job.objects.filter(type="webhook", secret_headers__isnull=True, payload__contains=HAS_HEADERS)
    _rewrite(stored_before, _encrypt_secret_headers)


def put_secret_headers_back(apps: Any, schema_editor: Any) -> None:
    Job = apps.get_model("notifications", "Job")
    _rewrite(Job.objects.filter(secret_headers__isnull=False), _decrypt_secret_headers)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("notifications", "0007_job_secret_headers"),
    ]

    operations = [
        migrations.RunPython(move_secret_headers, put_secret_headers_back, elidable=True),
    ]
