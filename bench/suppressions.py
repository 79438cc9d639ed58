"""suppressions: the suppression check's lookup when one account lists a million addresses.

The addresses are seeded in one set-based statement; then `suppression_reason`, the one lookup an email's send and
each email attempt make, runs in this process for listed and unlisted addresses in turn, and the statement's plan is
printed as PostgreSQL ran it. bench/README.md says how to read the report.
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

from bench.common import log, option, own_services, percentile, run_sql, seed_accounts, table, timed, verdict

HELP = "the suppression check with a million addresses on one account's list"
MAX_LOOKUP_P99_MS = 1.0
LOOKUP_COLUMNS = "addresses<12|lookups>9|p50 ms>9.3f|p99 ms>9.3f|max ms>9.3f"

# One account's list, newest first by a second apart, every reason a provider gives; addresses user<n>@<domain>.
SEED_SQL = """
INSERT INTO suppressions_suppression (account_id, email, reason, provider, job_id, created_at)
SELECT %(account)s, 'user' || g || '@example.com',
       (ARRAY['HARD_BOUNCE', 'SPAM_REPORT', 'UNSUBSCRIBED'])[1 + g %% 3], 'POSTMARK', gen_random_uuid(),
       now() - g * interval '1 second'
FROM generate_series(1, %(addresses)s) AS g
"""


def options(parser: argparse.ArgumentParser) -> None:
    option(parser, "addresses", 1_000_000, "suppressed addresses of the one account", env="suppressions")
    option(parser, "lookups", 5_000, "lookups of listed addresses, and as many of unlisted ones", env="suppressions")


def run(args: argparse.Namespace) -> None:
    with own_services(args):
        account = seed_accounts(1, prefix="suppressions")[0].account
        seconds: dict[str, float] = {}
        with timed("seed", seconds):
            run_sql(SEED_SQL, {"account": account.pk, "addresses": args.addresses})
            run_sql("ANALYZE suppressions_suppression")
        log(f"suppressions: {args.addresses:,} addresses seeded in {seconds['seed']:.1f} s")
        listed = [f"User{random.randint(1, args.addresses)}@Example.com" for _ in range(args.lookups)]
        unlisted = [f"someone{n}@example.net" for n in range(args.lookups)]
        timings = {"listed": lookups(account.pk, listed), "unlisted": lookups(account.pk, unlisted)}
        plan = lookup_plan(account.pk, listed[0])
    report(timings, plan)


def lookups(account_id: int, addresses: list[str]) -> list[float]:
    """Milliseconds each `suppression_reason` call took, the round trip to PostgreSQL included."""
    from suppressions.selectors import suppression_reason

    timings = []
    for address in addresses:
        started = time.perf_counter()
        suppression_reason(account_id=account_id, email=address)
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def lookup_plan(account_id: int, address: str) -> str:
    """The check's own statement, as PostgreSQL ran it."""
    from django.db import connection

    from suppressions.selectors import SUPPRESSION_REASON_SQL, normalized_address

    with connection.cursor() as cursor:
        params = [account_id, normalized_address(address)]
        cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {SUPPRESSION_REASON_SQL}", params)
        return "\n".join(line for (line,) in cursor.fetchall())


def report(timings: dict[str, list[float]], plan: str) -> None:
    print("\nThe suppression check, in one process (the statement and its round trip)")
    rows: list[tuple[Any, ...]] = [
        (kind, len(values), percentile(values, 0.5), percentile(values, 0.99), max(values))
        for kind, values in timings.items()
    ]
    table(LOOKUP_COLUMNS, rows)
    print("\nThe lookup's plan, as PostgreSQL ran it:")
    print("  " + plan.replace("\n", "\n  "))
    worst = max(percentile(values, 0.99) for values in timings.values())
    verdict("lookup p99", f"{worst:.3f} ms", f"< {MAX_LOOKUP_P99_MS:g} ms", worst < MAX_LOOKUP_P99_MS)
