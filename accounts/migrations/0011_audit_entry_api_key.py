"""An audit entry names the API key the holder made the change with (docs/rules.md, "Audit log"): a nullable column,
empty on every entry before it and on those of the dashboard's session, staff and the operator."""

from __future__ import annotations

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("accounts", "0010_audit_entry")]

    operations = [
        migrations.AddField(
            model_name="auditentry",
            name="api_key",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="audit_entries",
                to="accounts.apikey",
            ),
        ),
    ]
