"""Fills the labels (Job.labels) of the emails stored with tags or metadata before 0019.

Only jobs stored since 0017 can have them: the send took neither before. A batch per transaction in id order, as
0010 does, and only jobs still without labels, so a run that stopped is finished by running it again. An email that
a web process of the previous release accepts while this runs keeps no labels: its events then carry neither
(docs/operations.md, "Upgrading").
"""

from __future__ import annotations

from typing import Any

from django.db import migrations, transaction
from django.db.migrations.recorder import MigrationRecorder

BATCH_SIZE = 2000
# The payload's keys the events carry, as the send stores them since 0019 (notifications/services.py).
EVENT_LABELS = ("tags", "metadata")


def fill_labels(apps: Any, schema_editor: Any) -> None:
    Job = apps.get_model("notifications", "Job")
    tags_since = _applied_at(schema_editor.connection, "0017_job_tag")
    if tags_since is None:
        return
    without = Job.objects.filter(created_at__gte=tags_since, labels__isnull=True).order_by("id").only("id", "payload")
    last_id = None
    while batch := list((without.filter(id__gt=last_id) if last_id else without)[:BATCH_SIZE]):
        labelled = []
        for job in batch:
            job.labels = {key: job.payload[key] for key in EVENT_LABELS if job.payload.get(key)} or None
            if job.labels:
                labelled.append(job)
        with transaction.atomic():
            Job.objects.bulk_update(labelled, ["labels"])
        last_id = batch[-1].id


def _applied_at(connection: Any, name: str) -> Any:
    applied = MigrationRecorder(connection).migration_qs.filter(app="notifications", name=name)
    return applied.values_list("applied", flat=True).first()


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("notifications", "0019_job_labels")]

    operations = [migrations.RunPython(fill_labels, migrations.RunPython.noop, elidable=True)]
