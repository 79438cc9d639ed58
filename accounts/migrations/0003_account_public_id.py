from __future__ import annotations

import uuid
from typing import Any

from django.db import migrations, models


def give_each_account_its_own_id(apps: Any, schema_editor: Any) -> None:
    # A default on AddField is computed once: every existing row would share one UUID.
    Account = apps.get_model("accounts", "Account")
    for account in Account.objects.only("pk").iterator():
        Account.objects.filter(pk=account.pk).update(public_id=uuid.uuid4())


class Migration(migrations.Migration):
    dependencies = [("accounts", "0002_providerkey")]

    operations = [
        migrations.AddField(model_name="account", name="public_id", field=models.UUIDField(null=True, editable=False)),
        migrations.RunPython(give_each_account_its_own_id, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="account",
            name="public_id",
            field=models.UUIDField(default=uuid.uuid4, unique=True, editable=False),
        ),
    ]
