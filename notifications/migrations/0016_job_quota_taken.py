"""Whether a job took its quota unit (docs/rules.md, "Quota"), with the database's default so the release before goes
on storing jobs while this runs, then marked on the jobs stored before it.

Before this, an email failed on arrival for a suppressed recipient took no unit, and a test job never takes one:
those are marked as having taken none, so Retry Job takes the unit of such a job that counts. Every other job took
its unit when it was accepted if its plan counted it; a paid plan's email, which took none, stays marked as taken:
whether it took one cannot be told from the row, and its plan counts no email.

A job failed on arrival was never claimed when its first log was written: its ``started_at``, set by the first claim
of a later Retry Job, is empty or later than that log. A job suppressed while it waited was claimed before the log
that failed it. A batch per transaction in id order, as 0010 does.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations, models, transaction
from django.db.models import Exists, F, OuterRef, Q

BATCH_SIZE = 2000
# suppressions.services.suppressed_message's text, up to the reason (docs/suppressions.md).
SUPPRESSED_PREFIX = "Recipient is on the suppression list ("


def mark_jobs_that_took_no_unit(apps: Any, schema_editor: Any) -> None:
    Job = apps.get_model("notifications", "Job")
    DeliveryLog = apps.get_model("notifications", "DeliveryLog")
    failed_on_arrival = DeliveryLog.objects.filter(
        Q(job__started_at__isnull=True) | Q(created_at__lt=F("job__started_at")),
        job=OuterRef("pk"),
        error_message__startswith=SUPPRESSED_PREFIX,
    )
    took_none = Job.objects.filter(Q(test=True) | Exists(failed_on_arrival), quota_taken=True).order_by("id")
    last_id = None
    while batch := list((took_none.filter(id__gt=last_id) if last_id else took_none).values_list("id", flat=True)[:BATCH_SIZE]):
        with transaction.atomic():
            Job.objects.filter(id__in=batch).update(quota_taken=False)
        last_id = batch[-1]


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("notifications", "0015_test_mode")]

    operations = [
        migrations.AddField(
            model_name="job", name="quota_taken", field=models.BooleanField(db_default=True, default=True)
        ),
        migrations.RunPython(mark_jobs_that_took_no_unit, migrations.RunPython.noop, elidable=True),
    ]
