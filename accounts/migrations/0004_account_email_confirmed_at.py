from __future__ import annotations

from typing import Any

from django.db import migrations, models
from django.db.models import F


def confirm_existing_accounts(apps: Any, schema_editor: Any) -> None:
    # Every account before sign-up existed was made by an operator, who vouched for the address.
    apps.get_model("accounts", "Account").objects.update(email_confirmed_at=F("created_at"))


class Migration(migrations.Migration):
    dependencies = [("accounts", "0003_account_public_id")]

    operations = [
        migrations.AddField(
            model_name="account", name="email_confirmed_at", field=models.DateTimeField(blank=True, null=True)
        ),
        migrations.RunPython(confirm_existing_accounts, migrations.RunPython.noop),
    ]
