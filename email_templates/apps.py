from __future__ import annotations

from django.apps import AppConfig


class EmailTemplatesConfig(AppConfig):
    name = "email_templates"
    verbose_name = "Email templates"
