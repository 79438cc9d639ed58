from __future__ import annotations

from typing import Any

from django.db import migrations, models
from django.db.models import F, Max, OuterRef, Subquery


def date_finished_jobs(apps: Any, schema_editor: Any) -> None:
    # A completed job ended when it completed; a failed one with its last attempt.
    Job = apps.get_model("notifications", "Job")
    DeliveryLog = apps.get_model("notifications", "DeliveryLog")
    Job.objects.filter(status="completed").update(finished_at=F("completed_at"))
    last_attempt = (
        DeliveryLog.objects.filter(job=OuterRef("pk")).values("job").annotate(last=Max("created_at")).values("last")
    )
    Job.objects.filter(status="failed").update(finished_at=Subquery(last_attempt))


class Migration(migrations.Migration):
    dependencies = [("notifications", "0004_job_url_credentials")]

    operations = [
        migrations.AddField(model_name="job", name="finished_at", field=models.DateTimeField(blank=True, null=True)),
        migrations.RunPython(date_finished_jobs, migrations.RunPython.noop),
        migrations.AddIndex(
            model_name="job",
            index=models.Index(
                condition=models.Q(("finished_at__isnull", False)),
                fields=["account", "finished_at", "status"],
                name="job_account_finished",
            ),
        ),
    ]
