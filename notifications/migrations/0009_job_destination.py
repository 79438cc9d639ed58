"""Each job's destination (an email's recipient, a webhook URL's host, in lower case), for the jobs list's column and
its `to` and `host` filters (notifications/destination.py). Empty until 0010 fills it; 0011 builds the index. The
column's database default lets the previous release's web processes, which do not know it, go on storing jobs.
"""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0005_account_monthly_limit"),
        ("notifications", "0008_move_secret_headers"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="destination",
            field=models.CharField(blank=True, db_default="", default="", max_length=254),
        ),
    ]
