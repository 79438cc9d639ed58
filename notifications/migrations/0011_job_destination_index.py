"""The index the jobs list's `to` and `host` filters read: one range of the account's jobs to one destination,
newest first (notifications/selectors.py)."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("notifications", "0010_fill_job_destinations")]

    operations = [
        migrations.AddIndex(
            model_name="job",
            index=models.Index(
                fields=["account", "destination", "-created_at"], name="job_account_destination_recent"
            ),
        ),
    ]
