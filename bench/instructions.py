"""instructions: the instructions one accepted send costs the web process, counted by valgrind's callgrind, this
code against another revision's (``--against``).

A wall-clock comparison (accept) on a 2-core machine moves by a few percent from run to run, as much as the change it
judges; an instruction count does not move with the machine's other load. Each side gets a database of its own,
migrated by its own code, with one account (Free, with a rate and a quota of its own so none is limited; for
``--send message`` with an app of 10 endpoints, as bench/messages.py's). Then a process of each side's code runs
under callgrind with its counting off: it sets Django up and makes WARMUP sends through Django's test client (the
whole request: middleware, authentication, the rate limit, the view, the statements), then turns the counting on
(``callgrind_control -i on``), makes ``--sends`` more, and turns it off. What
was counted, over ``--sends``, is one send's instructions in the web process: not the set-up, whose count varies
from run to run by more than a send's change (where the interpreter puts objects moves how their hashes collide),
not gunicorn's (the same on both sides), nor PostgreSQL's or Redis's: a change to what a send asks them is judged by
its statements apart. bench/README.md says how to read the report.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from bench import templates
from bench.accept import EMAIL, EMAIL_PATH, SINGLE, Load
from bench.common import BIN, ROOT, VAR_DIR, BenchError, log, option, own_services, revision_tree, table, verdict
from bench.messages import APP_UID, MESSAGE_LOAD, TARGET_ENDPOINTS, message_file_written

HELP = "instructions per accepted send in the web process (valgrind), this code against --against"
DATABASE = "notifyhub_bench_instructions"
# The target every change to the accept path is held to: after against before.
MIN_SHARE_OF_BEFORE = 0.97
WARMUP = 40
# What each side's process runs, from its own tree: only Django and the side's own services, so a revision from before
# this file works too. SEED makes the account (given $BENCH_TEMPLATE, saves that template in it; with
# $BENCH_ENDPOINTS, its app of that many endpoints taking every type, as bench/messages.py's) and prints its key;
# SEND makes WARMUP sends, then $SENDS.
SEED = """
import json, os, django
django.setup()
from accounts.services import account_create, account_set_monthly_limit, account_set_rate_limit
account, key = account_create(email="instructions@bench.example", plan="free")
account_set_monthly_limit(account=account, limit=100_000_000)
account_set_rate_limit(account=account, rate=1_000_000)
if os.environ.get("BENCH_TEMPLATE"):
    from email_templates.services import template_create
    template_create(account=account, name="Receipt", **json.loads(os.environ["BENCH_TEMPLATE"]))
if endpoints := int(os.environ.get("BENCH_ENDPOINTS", "0")):
    from customer_webhooks.services import app_create, endpoint_create
    app = app_create(account=account, name="Bench", uid=os.environ["BENCH_APP_UID"])
    for number in range(endpoints):
        endpoint_create(app=app, url=f"https://hooks.example.com/customer-{number}")
print(key)
"""
# --send template: the templates bench's receipt, sent by its alias with one `data` (bench/templates.py).
TEMPLATE = {"alias": templates.ALIAS, "subject": templates.SUBJECT, "html": templates.HTML}
TEMPLATED_FILE = VAR_DIR / "instructions-templated.json"
SEND = """
import json, os, subprocess, uuid, django
django.setup()
from django.test import Client
client, body = Client(SERVER_NAME="localhost"), json.loads(os.environ["BENCH_BODY"])
headers = {"HTTP_X_API_KEY": os.environ["BENCH_KEY"]}
def sends(count):
    for _ in range(count):
        answer = client.post(os.environ["BENCH_PATH"], data=json.dumps({**body, "idempotencyKey": uuid.uuid4().hex}),
                             content_type="application/json", secure=True, **headers)
        assert answer.status_code == 202, (answer.status_code, answer.content[:300])
def counting(state):
    subprocess.run(["callgrind_control", "-i", state, str(os.getpid())], check=True, capture_output=True)
sends(int(os.environ["BENCH_WARMUP"]))
counting("on")
sends(int(os.environ["BENCH_SENDS"]))
counting("off")
"""
INSTRUCTIONS = re.compile(r"I\s+refs:\s+([\d,]+)")
COLUMNS = "side<10|revision<14|instructions a send>22|counted>18"


@dataclass(frozen=True)
class Side:
    name: str
    tree: Path
    database_url: str


@dataclass(frozen=True)
class Count:
    side: Side
    revision: str
    counted: int
    sends: int

    @property
    def per_send(self) -> float:
        return self.counted / self.sends


def options(parser: argparse.ArgumentParser) -> None:
    before = "the git revision before the change (HEAD: what is not committed)"
    option(parser, "against", "HEAD", before, env="instructions")
    option(parser, "sends", 200, "sends counted after the warm-up", env="instructions")
    option(
        parser,
        "send",
        "email",
        "what a request sends (template: an email with the templates bench's receipt; message: to an app's "
        f"{TARGET_ENDPOINTS} endpoints)",
        env="instructions",
        choices=["webhook", "email", "template", "message"],
    )


def run(args: argparse.Namespace) -> None:
    if shutil.which("valgrind") is None:
        raise BenchError("valgrind is not installed; on Debian/Ubuntu: apt-get install valgrind")
    if args.send == "template":
        load = _templated_load()
    else:
        load = {"email": EMAIL, "webhook": SINGLE, "message": MESSAGE_LOAD}[args.send]
    if args.send == "message":
        message_file_written()
    log(f"instructions: {args.send} sends, {args.sends} counted after {WARMUP}, this code against {args.against}")
    with own_services(args):
        after_side = Side("after", ROOT, args.database_url)
        before_side = Side("before", revision_tree(args.against), side_database_url(args, "before"))
        side_migrate(before_side)
        counts = [_count(side, load, args.sends, args.against) for side in (after_side, before_side)]
    after, before = counts
    table(COLUMNS, [(c.side.name, c.revision, c.per_send, c.counted) for c in counts])
    share = before.per_send / after.per_send
    verdict("before/after instructions", f"{share:.1%}", f">= {MIN_SHARE_OF_BEFORE:.0%}", share >= MIN_SHARE_OF_BEFORE)
    extra = after.per_send - before.per_send
    print(f"  after: {extra:+,.0f} instructions a send ({after.per_send / before.per_send - 1:+.2%})")


def _templated_load() -> Load:
    """An email send with the templates bench's receipt and one `data`, which SEED saves when given TEMPLATE."""
    fields = {"to": templates.RECIPIENT, "template": templates.ALIAS, "data": templates.sample_data(random.Random(0))}
    TEMPLATED_FILE.parent.mkdir(parents=True, exist_ok=True)
    TEMPLATED_FILE.write_text(json.dumps(fields))
    return Load(path=EMAIL_PATH, fields_file=TEMPLATED_FILE)


def side_database_url(args: argparse.Namespace, suffix: str) -> str:
    """The bench's database URL with ``suffix`` on the database's name: the other side's, made anew."""
    params = conninfo_to_dict(args.database_url)
    name = f"{params['dbname']}_{suffix}"
    with psycopg.connect(args.database_url, dbname="postgres", autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return args.database_url.rsplit("/", 1)[0] + f"/{name}"


def _env(side: Side, **extra: str) -> dict[str, str]:
    # The same hash seed on both sides and both runs: dict and set layouts, and so their work, alike.
    return {**os.environ, "DATABASE_URL": side.database_url, "LOG_LEVEL": "WARNING", "PYTHONHASHSEED": "0", **extra}


def side_migrate(side: Side) -> None:
    log(f"instructions: migrating the {side.name} side's database with its own code")
    subprocess.run([str(BIN / "python"), "manage.py", "migrate", "-v", "0"], cwd=side.tree, env=_env(side), check=True)


def _count(side: Side, load: Load, sends: int, against: str) -> Count:
    """Seeds the side's account, then counts ``sends`` of its sends."""
    template = {"BENCH_TEMPLATE": json.dumps(TEMPLATE)} if load.fields_file == TEMPLATED_FILE else {}
    endpoints = TARGET_ENDPOINTS if load is MESSAGE_LOAD else 0
    seeded = subprocess.run(
        [str(BIN / "python"), "-c", SEED],
        cwd=side.tree,
        env=_env(side, BENCH_ENDPOINTS=str(endpoints), BENCH_APP_UID=APP_UID, **template),
        capture_output=True,
        text=True,
    )
    if seeded.returncode != 0:
        raise BenchError(f"{side.name}: seeding failed: {seeded.stderr[-500:]}")
    env = _env(
        side,
        BENCH_KEY=seeded.stdout.split()[-1],
        BENCH_PATH=load.path,
        BENCH_BODY=json.dumps({k: v for k, v in load.one_send("").items() if k != "idempotencyKey"}),
        BENCH_WARMUP=str(WARMUP),
        BENCH_SENDS=str(sends),
    )
    log(f"instructions: {side.name}: its sends under callgrind (minutes)")
    out = VAR_DIR / f"callgrind-{side.name}.out"
    command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]
    done = subprocess.run(
        [*command, str(BIN / "python"), "-c", SEND], cwd=side.tree, env=env, capture_output=True, text=True
    )
    found = INSTRUCTIONS.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise BenchError(f"{side.name}: the counted run failed: {done.stderr[-800:]}")
    out.unlink(missing_ok=True)
    revision = "this code" if side.tree == ROOT else against
    return Count(side, revision, int(found.group(1).replace(",", "")), sends)
