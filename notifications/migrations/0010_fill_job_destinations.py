"""Fills the destination of the jobs stored before 0009, as the send endpoints now store it
(notifications/destination.py).

A batch per transaction in id order, so delivering workers never wait long on a row this holds. Only jobs still
without one are taken, so a run that stopped is finished by running it again. A job that a web process of the
previous release accepts while this runs keeps an empty destination: it is listed, but no filter finds it
(docs/operations.md, "Upgrading").
"""

from __future__ import annotations

from typing import Any

from django.db import migrations, transaction

from notifications.destination import job_destination

BATCH_SIZE = 2000


def fill_destinations(apps: Any, schema_editor: Any) -> None:
    Job = apps.get_model("notifications", "Job")
    without = Job.objects.filter(destination="").order_by("id").only("id", "type", "payload")
    last_id = None
    while batch := list((without.filter(id__gt=last_id) if last_id else without)[:BATCH_SIZE]):
        for job in batch:
            job.destination = job_destination(job.type, job.payload)
        with transaction.atomic():
            Job.objects.bulk_update(batch, ["destination"])
        last_id = batch[-1].id


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("notifications", "0009_job_destination")]

    operations = [migrations.RunPython(fill_destinations, migrations.RunPython.noop, elidable=True)]
