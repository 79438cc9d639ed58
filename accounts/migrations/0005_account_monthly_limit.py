from __future__ import annotations

import django.core.validators
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("accounts", "0004_account_email_confirmed_at")]

    operations = [
        migrations.AddField(
            model_name="account",
            name="monthly_limit",
            field=models.PositiveIntegerField(
                blank=True, null=True, validators=[django.core.validators.MinValueValidator(1)]
            ),
        ),
    ]
