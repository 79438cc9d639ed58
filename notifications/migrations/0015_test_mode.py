"""Test mode (docs/rules.md, "Test mode"): a job's ``test`` flag, with the database's default so the release before
goes on storing live jobs while this runs; idempotency keys unique within a mode, the new index built before the
old one goes, so no moment holds neither; and the small index a test key's lists read."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("notifications", "0014_job_scheduled_for")]

    operations = [
        migrations.AddField(
            model_name="job", name="test", field=models.BooleanField(db_default=False, default=False)
        ),
        migrations.AddConstraint(
            model_name="job",
            constraint=models.UniqueConstraint(
                condition=models.Q(("idempotency_key__isnull", False)),
                fields=("account", "test", "idempotency_key"),
                name="unique_idempotency_key_per_mode",
            ),
        ),
        migrations.RemoveConstraint(model_name="job", name="unique_idempotency_key_per_account"),
        migrations.AddIndex(
            model_name="job",
            index=models.Index(
                condition=models.Q(("test", True)), fields=["account", "-created_at"], name="job_account_test_recent"
            ),
        ),
    ]
