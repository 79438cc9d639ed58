"""Creates the bench's Startup accounts and writes their API keys, one a line (run by bench/accept.py).

Each account gets its current usage row up front, so neither server pays for creating it
during the measurement: both see the steady state of an account that has sent before.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import django


def seed(*, count: int, keys_file: Path) -> None:
    from django.db import connection, transaction
    from django.utils import timezone

    from accounts.billing import billing_period
    from accounts.models import UsagePeriod
    from accounts.services import account_create

    raw_keys: list[str] = []
    today = timezone.now().date()
    with transaction.atomic():
        for number in range(count):
            account, raw_key = account_create(email=f"bench{number}@bench.example", plan="startup")
            period_start, _ = billing_period(anchor=account.plan_started_on, today=today)
            UsagePeriod.objects.create(account=account, period_start=period_start)
            raw_keys.append(raw_key)
    with connection.cursor() as cursor:
        # Fresh tables have no statistics; give the planner real ones before the load starts.
        cursor.execute("ANALYZE")
    keys_file.write_text("".join(f"{key}\n" for key in raw_keys))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--keys-file", type=Path, required=True)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "notifyhub.settings")
    django.setup()
    seed(count=args.count, keys_file=args.keys_file)


if __name__ == "__main__":
    main()
