from __future__ import annotations

from datetime import UTC, date, datetime, time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.management.commands._account_args import account_or_error
from accounts.models import Account
from core.progress import Progress
from notifications.management.commands._batch_args import add_batch_size
from notifications.models import JobType
from notifications.selectors import failed_jobs
from notifications.services import RetriedBatch, failed_jobs_retry


class Command(BaseCommand):
    help = (
        "Re-queue failed jobs with Retry Job's rules, in batches. Stopping it (Ctrl-C) loses nothing: "
        "run it again to re-queue the rest."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--since", metavar="DATE", help="only jobs created on or after this day (UTC), YYYY-MM-DD")
        parser.add_argument("--type", choices=JobType.values, help="only this type of job")
        parser.add_argument("--account", metavar="EMAIL", help="only this account's jobs")
        add_batch_size(parser)

    def handle(
        self,
        *args: Any,
        since: str | None,
        type: str | None,
        account: str | None,
        batch_size: int,
        **options: Any,
    ) -> None:
        holder, created_since = _usable_account(account), _day_start(since)
        filters: dict[str, Any] = {"account": holder, "job_type": type, "created_since": created_since}
        done = RetriedBatch(requeued=0, skipped=0)
        try:
            with Progress(self.stderr, total=failed_jobs(**filters).count(), noun="jobs") as progress:
                for batch in failed_jobs_retry(**filters, batch_size=batch_size):
                    done = done + batch
                    progress.advance(batch.handled)
        except KeyboardInterrupt:
            self._report(done)
            raise CommandError("Interrupted: run retryfailed again to re-queue the rest.", returncode=130) from None
        self._report(done)

    def _report(self, done: RetriedBatch) -> None:
        self.stdout.write(f"Re-queued {done.requeued:,} failed job(s).")
        if done.skipped:
            self.stdout.write(
                f"Skipped {done.skipped:,} email job(s) of paid accounts without a provider key: they could only "
                "fail again. Add a key to the account, then run this again."
            )
        if done.over_quota:
            self.stdout.write(
                f"Left {done.over_quota:,} job(s) failed: they never took their quota unit, and their account's "
                'quota cannot cover them (docs/rules.md, "Retry Job"). Raise the account\'s limit, or wait for its '
                "next billing cycle."
            )


def _usable_account(email: str | None) -> Account | None:
    if email is None:
        return None
    account = account_or_error(email)
    if not account.is_usable:
        raise CommandError(f"The account of {email} is inactive or deleted: its jobs stay failed")
    return account


def _day_start(day: str | None) -> datetime | None:
    """Midnight UTC of a YYYY-MM-DD day."""
    if day is None:
        return None
    try:
        return datetime.combine(date.fromisoformat(day), time.min, tzinfo=UTC)
    except ValueError:
        raise CommandError(f"--since must be a day, YYYY-MM-DD, got {day!r}") from None
