"""The account audit log (docs/rules.md, "Audit log"): one row per change to an account, read newest first per
account through its index."""

from __future__ import annotations

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("accounts", "0009_test_mode")]

    operations = [
        migrations.CreateModel(
            name="AuditEntry",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "action",
                    models.CharField(
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
                            ("limit.changed", "Monthly limit changed"),
                            ("account.deleted", "Account deleted"),
                            ("account.restored", "Account restored"),
                        ],
                        max_length=32,
                    ),
                ),
                ("actor", models.CharField(max_length=160)),
                ("target", models.CharField(blank=True, max_length=2048)),
                ("ip", models.GenericIPAddressField(blank=True, null=True)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "account",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="audit_entries",
                        to="accounts.account",
                    ),
                ),
            ],
            options={
                "verbose_name_plural": "audit entries",
                "ordering": ["-created_at", "-id"],
                "indexes": [models.Index(fields=["account", "-created_at"], name="audit_account_recent")],
            },
        ),
    ]
