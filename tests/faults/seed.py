"""Prepares the fault tests' database, run in the service's environment: ``python -m tests.faults.seed COUNT``.

Migrates, creates COUNT Startup accounts (bench.common.seed_accounts) and prints their API keys, a JSON list, as
the last line. One process for both: each start of Django costs seconds on a busy machine.
"""

from __future__ import annotations

import json
import sys

import django


def main(count: int) -> None:
    django.setup()
    from django.core.management import call_command

    from bench.common import seed_accounts

    call_command("migrate", verbosity=0, interactive=False)
    print(json.dumps([seeded.api_key for seeded in seed_accounts(count, prefix="faults")]))


if __name__ == "__main__":
    main(int(sys.argv[1]))
