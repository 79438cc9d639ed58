from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from notifications.engine.processing import jobs_sweep


class Command(BaseCommand):
    help = "Re-send the tasks of unfinished jobs the broker may have lost (what beat runs every few seconds)."

    def handle(self, *args: Any, **options: Any) -> None:
        count = jobs_sweep()
        self.stdout.write(f"Re-queued {count} job(s).")
