"""The finished jobs waiting to be announced to the accounts' event endpoints (notifications/outcomes.py)."""

from __future__ import annotations

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("notifications", "0012_destination_health")]

    operations = [
        migrations.CreateModel(
            name="JobAnnouncement",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("pending", "Pending"),
                            ("processing", "Processing"),
                            ("completed", "Completed"),
                            ("failed", "Failed"),
                        ],
                        max_length=12,
                    ),
                ),
                ("attempts", models.PositiveSmallIntegerField()),
                ("error_message", models.TextField(blank=True, null=True)),
                ("finished_at", models.DateTimeField()),
                (
                    "job",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="notifications.job"
                    ),
                ),
            ],
        ),
    ]
