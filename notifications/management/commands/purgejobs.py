from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from django.apps import apps
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from core.progress import Progress
from notifications.management.commands._batch_args import add_batch_size, positive_int
from notifications.models import Job
from notifications.selectors import finished_jobs
from notifications.services import finished_jobs_purge


class Command(BaseCommand):
    help = (
        "Delete the jobs that finished (completed or failed) more than DAYS days ago, with their delivery logs, "
        "tags, attachments and provider events, in batches; unfinished jobs and the daily figures stay. Stopping "
        "it (Ctrl-C) loses nothing: run it again to delete the rest."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--older-than", metavar="DAYS", type=positive_int, required=True)
        add_batch_size(parser)

    def handle(self, *args: Any, older_than: int, batch_size: int, **options: Any) -> None:
        cutoff = timezone.now() - timedelta(days=older_than)
        deleted: Counter[str] = Counter()
        try:
            with Progress(self.stderr, total=finished_jobs(finished_before=cutoff).count(), noun="jobs") as progress:
                for batch in finished_jobs_purge(finished_before=cutoff, batch_size=batch_size):
                    deleted.update(batch.rows)
                    progress.advance(batch.jobs)
        except KeyboardInterrupt:
            self._report(deleted, cutoff)
            raise CommandError("Interrupted: run purgejobs again to delete the rest.", returncode=130) from None
        self._report(deleted, cutoff)

    def _report(self, deleted: Counter[str], cutoff: datetime) -> None:
        jobs = deleted.pop(Job._meta.label, 0)
        under = ", ".join(
            f"{count:,} {apps.get_model(label)._meta.verbose_name_plural}" for label, count in sorted(deleted.items())
        )
        self.stdout.write(
            f"Deleted {jobs:,} job(s) that finished before {cutoff:%Y-%m-%d %H:%M} UTC"
            + (f", with {under}." if under else ".")
        )
