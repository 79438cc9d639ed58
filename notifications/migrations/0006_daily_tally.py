from __future__ import annotations

from datetime import UTC
from typing import Any

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import Count, Q
from django.db.models.functions import TruncDate


def tally_finished_jobs(apps: Any, schema_editor: Any) -> None:
    Job = apps.get_model("notifications", "Job")
    DailyTally = apps.get_model("notifications", "DailyTally")
    per_day = (
        Job.objects.filter(finished_at__isnull=False)
        .annotate(day=TruncDate("finished_at", tzinfo=UTC))
        .values("account_id", "day")
        .annotate(completed=Count("id", filter=Q(status="completed")), failed=Count("id", filter=Q(status="failed")))
        .order_by()
    )
    DailyTally.objects.bulk_create((DailyTally(**row) for row in per_day), batch_size=1000)


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0004_account_email_confirmed_at"),
        ("notifications", "0005_job_finished_at"),
    ]

    operations = [
        migrations.CreateModel(
            name="DailyTally",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("day", models.DateField()),
                ("completed", models.PositiveIntegerField(default=0)),
                ("failed", models.PositiveIntegerField(default=0)),
                (
                    "account",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="daily_tallies",
                        to="accounts.account",
                    ),
                ),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("account", "day"), name="unique_daily_tally")],
            },
        ),
        migrations.RunPython(tally_finished_jobs, migrations.RunPython.noop),
        migrations.RemoveIndex(model_name="job", name="job_account_finished"),
    ]
