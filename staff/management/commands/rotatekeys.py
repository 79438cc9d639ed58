from __future__ import annotations

from collections import Counter
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.progress import Progress
from notifications.management.commands._batch_args import DEFAULT_BATCH_SIZE, positive_int
from staff.keyrotation import ENCRYPTED_COLUMNS, Outcome, RotatedBatch, column_name, secrets_count, secrets_reencrypt

SKIPPED = (Outcome.CURRENT, Outcome.CHANGED)


class Command(BaseCommand):
    help = (
        "Re-encrypt every stored secret with the newest key of FIELD_ENCRYPTION_KEYS, in batches; a secret the "
        "newest key made is left as it is. Stopping it (Ctrl-C) loses nothing: run it again to re-encrypt the rest."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--batch-size",
            type=positive_int,
            default=DEFAULT_BATCH_SIZE,
            help=f"secrets a transaction (default {DEFAULT_BATCH_SIZE:,})",
        )

    def handle(self, *args: Any, batch_size: int, **options: Any) -> None:
        tally = Tally()
        try:
            with Progress(self.stderr, total=secrets_count(), noun="secrets") as progress:
                for batch in secrets_reencrypt(batch_size=batch_size):
                    tally.add(batch)
                    progress.advance(len(batch.outcomes))
        except KeyboardInterrupt:
            self._report(tally)
            raise CommandError("Interrupted: run rotatekeys again to re-encrypt the rest.", returncode=130) from None
        self._report(tally)
        if tally.unreadable:
            raise CommandError(
                f"{len(tally.unreadable):,} secret(s) decrypt with no key of FIELD_ENCRYPTION_KEYS and were left as "
                "they are (listed above): set them again, or put back the key that made them"
            )

    def _report(self, tally: Tally) -> None:
        for column, counts in tally.counts.items():
            self.stdout.write(_column_line(column, counts))
        for column, pk in tally.unreadable:
            self.stderr.write(f"{column}, row {pk}: no key of FIELD_ENCRYPTION_KEYS decrypts it")


class Tally:
    """What a run did so far, column by column, every listed column shown even when it held nothing."""

    def __init__(self) -> None:
        self.counts: dict[str, Counter[Outcome]] = {column_name(column): Counter() for column in ENCRYPTED_COLUMNS}
        self.unreadable: list[tuple[str, Any]] = []

    def add(self, batch: RotatedBatch) -> None:
        self.counts[batch.column].update(batch.outcomes.values())
        self.unreadable += [(batch.column, pk) for pk, got in batch.outcomes.items() if got is Outcome.UNREADABLE]


def _column_line(column: str, counts: Counter[Outcome]) -> str:
    """``accounts_providerkey.encrypted_api_key: 3 re-encrypted, 1 skipped (1 already under the newest key)``"""
    reasons = ", ".join(f"{counts[reason]:,} {reason}" for reason in SKIPPED if counts[reason])
    line = f"{column}: {counts[Outcome.REENCRYPTED]:,} re-encrypted, {sum(counts[r] for r in SKIPPED):,} skipped"
    line += f" ({reasons})" if reasons else ""
    return line + (f", {counts[Outcome.UNREADABLE]:,} unreadable" if counts[Outcome.UNREADABLE] else "")
