"""An API key's mode (docs/rules.md, "Test mode"), live unless made a test key: the database's default lets the
release before go on issuing keys while this runs."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("accounts", "0008_api_key_names_and_scopes")]

    operations = [
        migrations.AddField(
            model_name="apikey",
            name="mode",
            field=models.CharField(
                choices=[("live", "Live"), ("test", "Test")], db_default="live", default="live", max_length=8
            ),
        ),
    ]
