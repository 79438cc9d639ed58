"""An account's email templates and their immutable versions (docs/templates.md)."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from accounts.models import Account
from core.model_fields import JSONTextField

# The most templates one account may have.
TEMPLATES_PER_ACCOUNT = 100
NAME_MAX_LENGTH = 200


class Template(models.Model):
    """A named template of the account's, found by its id or its alias; what it renders is its newest version."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="email_templates")
    alias = models.CharField(max_length=64)
    name = models.CharField(max_length=NAME_MAX_LENGTH)
    created_at = models.DateTimeField(default=timezone.now)
    # When its newest version was saved.
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        # A deleted template's row goes (docs/templates.md, "Deleting"), so its alias is free again at once.
        constraints = [models.UniqueConstraint(fields=["account", "alias"], name="one_template_per_alias")]
        ordering = ["alias"]

    def __str__(self) -> str:
        return f"template {self.alias}"


class TemplateVersion(models.Model):
    """One saved state of a template, never changed once written: a send names the version it rendered."""

    template = models.ForeignKey(Template, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField()
    subject = models.TextField()
    html = models.TextField()
    text = models.TextField(null=True, blank=True)
    # The names of the data the parts read, found when saved (email_templates.engine.variables_read).
    variables = JSONTextField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["template", "version"], name="one_template_version_number")]
        ordering = ["-version"]

    def __str__(self) -> str:
        return f"{self.template_id} v{self.version}"
