"""A scheduled send's time (``sendAt``): a nullable column, so the release before goes on storing jobs while this
runs (docs/operations.md, "Upgrading")."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("notifications", "0013_job_announcement")]

    operations = [
        migrations.AddField(model_name="job", name="scheduled_for", field=models.DateTimeField(blank=True, null=True)),
    ]
