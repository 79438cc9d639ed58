"""An account's own rate limit, requests a minute per key in place of its plan's (docs/rules.md, "Limits"); the audit
log's `limit.changed` now says the monthly limit or the rate limit."""

from __future__ import annotations

import django.core.validators
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("accounts", "0011_audit_entry_api_key")]

    operations = [
        migrations.AddField(
            model_name="account",
            name="rate_limit",
            field=models.PositiveIntegerField(
                blank=True,
                null=True,
                validators=[
                    django.core.validators.MinValueValidator(1),
                    django.core.validators.MaxValueValidator(1000000),
                ],
            ),
        ),
        migrations.AlterField(
            model_name="auditentry",
            name="action",
            field=models.CharField(
                choices=[
                    ("api_key.created", "API key created"),
                    ("api_key.revoked", "API key revoked"),
                    ("provider_key.added", "Provider key added"),
                    ("provider_key.removed", "Provider key removed"),
                    ("provider_key.reordered", "Provider keys reordered"),
                    ("domain.requested", "Domain requested"),
                    ("domain.verified", "Domain verified"),
                    ("domain.deleted", "Domain deleted"),
                    ("signing_secret.generated", "Signing secret generated"),
                    ("signing_secret.rotated", "Signing secret rotated"),
                    ("signing_secret.deleted", "Signing secret deleted"),
                    ("tracking_credential.set", "Event tracking credential set"),
                    ("event_endpoint.created", "Event endpoint created"),
                    ("event_endpoint.deleted", "Event endpoint deleted"),
                    ("suppression.added", "Suppression added"),
                    ("suppression.removed", "Suppression removed"),
                    ("plan.changed", "Plan changed"),
                    ("limit.changed", "Limit changed"),
                    ("account.deleted", "Account deleted"),
                    ("account.restored", "Account restored"),
                ],
                max_length=32,
            ),
        ),
    ]
