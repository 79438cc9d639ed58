"""What every benchmark script needs: its own database and Redis DB, its processes stopped, its errors reported.

Each server or worker a benchmark starts runs in a session of its own, so Ctrl-C reaches only the script, whose
``finally`` blocks stop each process group (SIGTERM, then SIGKILL): nothing outlives a run, even an interrupted one.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from urllib.parse import urlsplit

import psycopg
import redis
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict


class BenchError(Exception):
    """The benchmark itself could not run (as opposed to a result that misses its target)."""


# --- A database and a Redis DB of the bench's own ---------------------------------------------


def database_name(database_url: str) -> str:
    name = str(conninfo_to_dict(database_url).get("dbname", ""))
    # The database is dropped on every run: refuse anything not obviously the bench's.
    if "bench" not in name:
        raise BenchError(f"refusing to recreate database {name!r}: its name must contain 'bench'")
    return name


def reset_database(database_url: str) -> None:
    """Drops and recreates the bench's database (empty; the caller migrates it)."""
    name = database_name(database_url)
    try:
        with psycopg.connect(database_url, dbname="postgres", autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    except psycopg.OperationalError as error:
        raise BenchError(f"cannot reach PostgreSQL at {database_url}: {error}") from error


def redis_client(redis_url: str) -> redis.Redis:
    # The DB is flushed at start and end: never let that be DB 0, where everything else lives by default.
    if urlsplit(redis_url).path.strip("/") in ("", "0"):
        raise BenchError(f"refusing to flush {redis_url}: give the bench a Redis DB of its own, e.g. /14")
    return redis.Redis.from_url(redis_url)


def flush_redis(redis_url: str) -> None:
    try:
        redis_client(redis_url).flushdb()
    except redis.RedisError as error:
        raise BenchError(f"cannot reach Redis at {redis_url}: {error}") from error


# --- Processes -----------------------------------------------------------------------------------


def port_open(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
        return True
    return False


def wait_until_listening(process: subprocess.Popen[bytes], port: int, name: str, log_path: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise BenchError(f"{name} exited with status {process.returncode}; see {log_path}")
        if port_open(port):
            return
        time.sleep(0.1)
    raise BenchError(f"{name} did not listen on port {port} within 60 s; see {log_path}")


def stop_group(process: subprocess.Popen[bytes], *, grace: float = 15.0) -> None:
    """Stops the process's whole group: a Celery or gunicorn master and its children, even if the master is stuck."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    # Children of a master that exited first (prefork, gunicorn workers) may still be in the group.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


# --- Running a benchmark ---------------------------------------------------------------------------


def _raise_on_sigterm(signum: int, frame: FrameType | None) -> None:
    # Turns `kill` into an exception so the finally blocks stop every process group and clean Redis.
    raise SystemExit(128 + signum)


def bench_main(run: Callable[[], None]) -> int:
    """Runs a benchmark; its exit status says whether it could run (1 if not), not whether targets were met."""
    signal.signal(signal.SIGTERM, _raise_on_sigterm)
    try:
        run()
    except BenchError as error:
        print(f"bench: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bench: interrupted", file=sys.stderr)
        return 130
    return 0
