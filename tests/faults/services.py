"""What a fault test runs and breaks: a PostgreSQL server, a PgBouncer in front of it, and the Procfile's processes
of its own.

Redis is ``RedisServer`` (tests/servers.py), which stops and starts on one port. Each class
stops everything it started, whatever the test's outcome.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from types import TracebackType

import psycopg

from bench.common import BIN, ROOT, port_open
from tests.conftest import free_port
from tests.servers import end_marked_processes, marked_processes

POSTGRES_USER = "postgres"
DATABASE = "notifyhub"
DEBIAN_POSTGRES = Path("/usr/lib/postgresql")
# Debian's package puts it in sbin, which a user's PATH may leave out.
DEBIAN_PGBOUNCER = Path("/usr/sbin/pgbouncer")


def postgres_bin_dir() -> Path | None:
    """The folder of initdb and pg_ctl: theirs on PATH, else the newest of Debian's packages, else None."""
    on_path = shutil.which("pg_ctl")
    if on_path and shutil.which("initdb"):
        return Path(on_path).resolve().parent  # Debian links them from /usr/local/bin; the server sits beside them
    found = [tool.parent for tool in DEBIAN_POSTGRES.glob("*/bin/pg_ctl") if (tool.parent / "initdb").exists()]
    return max(found, key=_debian_version, default=None)


def _debian_version(bin_dir: Path) -> list[int]:
    """/usr/lib/postgresql/15/bin: [15]."""
    return [int(part) for part in bin_dir.parent.name.split(".") if part.isdigit()]


def pgbouncer_binary() -> Path | None:
    """PgBouncer on PATH, else Debian's, else None."""
    on_path = shutil.which("pgbouncer")
    if on_path:
        return Path(on_path)
    return DEBIAN_PGBOUNCER if DEBIAN_PGBOUNCER.exists() else None


def _as_postgres_user(folder: Path) -> list[str]:
    """The prefix that runs a command as the postgres user, who is then given ``folder``; nothing when not root.

    PostgreSQL and PgBouncer both refuse to run as root.
    """
    if os.geteuid() != 0:
        return []
    owner = pwd.getpwnam(POSTGRES_USER)
    os.chown(folder, owner.pw_uid, owner.pw_gid)
    return ["runuser", "-u", POSTGRES_USER, "--"]


class Postgres:
    """A PostgreSQL server on a free port, its cluster made by initdb in a temporary folder, run by pg_ctl.

    The server refuses to run as root: as root, every command runs as the postgres user, who owns the folder.
    """

    def __init__(self, bin_dir: Path, log_dir: Path) -> None:
        self.port = free_port()
        self._bin = bin_dir
        self._log_dir = log_dir
        self._root = Path(tempfile.mkdtemp(prefix="notifyhub-faults-pg-"))
        self._as_owner = _as_postgres_user(self._root)
        self._data = self._root / "data"
        self._log = self._root / "postgres.log"

    @property
    def url(self) -> str:
        return f"postgres://{POSTGRES_USER}@127.0.0.1:{self.port}/{DATABASE}"

    def connect(self, dbname: str = DATABASE) -> psycopg.Connection[tuple[object, ...]]:
        return psycopg.connect(
            host="127.0.0.1", port=self.port, user=POSTGRES_USER, dbname=dbname, connect_timeout=5, autocommit=True
        )

    def start(self) -> None:
        # UTF8 in the C locale, whatever locales the machine has; a throw-away cluster need not wait for its disk.
        encoding = ["-E", "UTF8", "--locale=C", "--no-sync"]
        self._run("initdb", "-D", str(self._data), "-U", POSTGRES_USER, "--auth=trust", *encoding)
        # Its socket in the folder, not /var/run/postgresql: nothing is shared with the machine's own server.
        options = f"-p {self.port} -k {self._root} -c listen_addresses=127.0.0.1"
        self._pg_ctl("start", "-o", options)
        with self.connect("postgres") as connection:
            connection.execute(f"CREATE DATABASE {DATABASE}")

    def restart(self) -> None:
        """``pg_ctl restart -m fast``: every session is ended, the server stops and starts again; returns once it
        answers. pg_ctl starts it with the options it was first started with (postmaster.opts)."""
        self._pg_ctl("restart", "-m", "fast")
        self.connect().close()

    def stop(self) -> None:
        try:
            self._pg_ctl("stop", "-m", "immediate")
        except (RuntimeError, subprocess.TimeoutExpired):
            self._kill_postmaster()
        finally:
            with contextlib.suppress(OSError):
                shutil.copy(self._log, self._log_dir / "postgres.log")
            shutil.rmtree(self._root, ignore_errors=True)

    def _pg_ctl(self, *args: str) -> None:
        self._run("pg_ctl", "-D", str(self._data), "-l", str(self._log), "-w", "-t", "60", *args)

    def _run(self, tool: str, *args: str) -> None:
        command = [*self._as_owner, str(self._bin / tool), *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=90)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} exited with {done.returncode}: {done.stderr or done.stdout}")

    def _kill_postmaster(self) -> None:
        with contextlib.suppress(OSError, ValueError, IndexError):
            os.kill(int((self._data / "postmaster.pid").read_text().split()[0]), signal.SIGKILL)


class PgBouncer:
    """PgBouncer in transaction pooling on a free port, in front of the PostgreSQL server on ``server_port``: its
    configuration, user list and log in a temporary folder, the process in the foreground of a session of its own.
    It stops and starts again on the same port (a pooler that is down); ``remove`` deletes the folder.

    Like the server, it refuses to run as root: as root it runs as the postgres user, who owns the folder.
    """

    def __init__(self, binary: Path, *, server_port: int, log_dir: Path, database: str = DATABASE) -> None:
        self.port = free_port()
        self.database = database
        self._binary = binary
        self._server_port = server_port
        self._log_dir = log_dir
        self._root = Path(tempfile.mkdtemp(prefix="notifyhub-pgbouncer-"))
        self._as_owner = _as_postgres_user(self._root)
        self._log = self._root / "pgbouncer.log"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"postgres://{POSTGRES_USER}@127.0.0.1:{self.port}/{self.database}"

    def start(self) -> None:
        config = self._write_config()
        with self._log.open("ab") as log:
            self._process = subprocess.Popen(
                [*self._as_owner, str(self._binary), str(config)],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            self._wait_until_it_answers()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        process, self._process = self._process, None
        try:
            if process is not None:
                _end_pgbouncer(process, through_runuser=bool(self._as_owner))
        finally:
            with contextlib.suppress(OSError):
                shutil.copy(self._log, self._log_dir / "pgbouncer.log")

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self._root, ignore_errors=True)

    def admin(self, command: str) -> None:
        """A command on PgBouncer's admin console (``PAUSE``, ``RESUME``), as its admin user."""
        with psycopg.connect(self._conninfo("pgbouncer"), autocommit=True, prepare_threshold=None) as console:
            console.execute(command)

    def _write_config(self) -> Path:
        users = self._root / "userlist.txt"
        users.write_text(f'"{POSTGRES_USER}" ""\n')  # trust asks no password, but the user must be listed
        config = self._root / "pgbouncer.ini"
        config.write_text(
            "[databases]\n"
            f"* = host=127.0.0.1 port={self._server_port}\n"
            "\n[pgbouncer]\n"
            f"listen_addr = 127.0.0.1\nlisten_port = {self.port}\n"
            # No Unix socket: nothing in /tmp is shared with the machine's own PgBouncer.
            "unix_socket_dir =\n"
            f"auth_type = trust\nauth_file = {users}\nadmin_users = {POSTGRES_USER}\n"
            "pool_mode = transaction\ndefault_pool_size = 10\n"
            # Each thread of every web, worker and beat process keeps a client connection; the default is 100.
            "max_client_conn = 500\n"
            # As docs/operations.md's pgbouncer.ini: after a failed login to PostgreSQL (a restart), try again within a
            # second rather than 15; a query that waits 10 s for a server connection fails, rather than after 120.
            "server_login_retry = 1\nquery_wait_timeout = 10\n"
        )
        return config  # readable by all, as the postgres user needs; PgBouncer writes nothing in the folder

    def _wait_until_it_answers(self) -> None:
        deadline = time.monotonic() + 30
        while True:
            try:
                with self.connect() as connection:
                    connection.execute("SELECT 1")
                return
            except psycopg.OperationalError:
                if self._process is None or self._process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"PgBouncer did not answer on port {self.port}; see {self._log_dir / 'pgbouncer.log'}"
                    ) from None
                time.sleep(0.1)

    def connect(self) -> psycopg.Connection[tuple[object, ...]]:
        # Nothing prepared: the next statement may run in another server session.
        return psycopg.connect(self._conninfo(self.database), autocommit=True, prepare_threshold=None)

    def _conninfo(self, dbname: str) -> str:
        return f"host=127.0.0.1 port={self.port} user={POSTGRES_USER} dbname={dbname} connect_timeout=5"


def _end_pgbouncer(process: subprocess.Popen[bytes], *, through_runuser: bool) -> None:
    """SIGTERM, PgBouncer's immediate shutdown, to PgBouncer itself: runuser then reaps it and ends too (signalled
    itself, runuser would wait 2 s, kill it and leave it unreaped). SIGKILL to the whole session if it lingers."""
    pgbouncer = _children(process.pid) if through_runuser else [process.pid]
    for pid in pgbouncer or [process.pid]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _children(pid: int) -> list[int]:
    with contextlib.suppress(OSError, ValueError):
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    return []


# Runs a command once and then waits instead of exiting: honcho stops every process as soon as one exits, and a
# worker a test kills must stay dead while the others go on.
RUN_ONCE = """#!/bin/sh
"$@"
echo "run-once: $1 exited with status $?; not starting it again" >&2
exec sleep infinity
"""
# What a Celery worker logs once it consumes: "worker.2@host ready."
WORKER_READY = re.compile(r"\b([\w.-]+)@\S+ ready\.")


def procfile_without_worker_restarts(folder: Path) -> Path:
    """The Procfile, written into ``folder`` with its worker run once instead of by bin/keep-running, which would
    start a killed worker again. Every other line, and the worker's command, stay as they are."""
    run_once = folder / "run-once"
    run_once.write_text(RUN_ONCE)
    run_once.chmod(0o755)
    lines = []
    for line in (ROOT / "Procfile").read_text().splitlines():
        name, _, command = line.partition(":")
        if name == "worker":
            assert command.startswith(" bin/keep-running "), f"the Procfile's worker line changed: {line}"
            command = command.replace("bin/keep-running", str(run_once), 1)
        lines.append(f"{name}:{command}")
    procfile = folder / "Procfile"
    procfile.write_text("\n".join(lines) + "\n")
    return procfile


class ProcfileProcesses:
    """The Procfile's processes (web, worker, beat) started by honcho, as `make run` starts them; or another
    Procfile's, and several of a kind (``concurrency``: ``{"worker": 3}``, named worker.1 to worker.3).

    honcho gives each process a session of its own and stops them all when it is stopped. Each also carries a
    marker in its environment, so any that outlived honcho (a worker that bin/keep-running was just starting
    again) is found in /proc and killed.
    """

    def __init__(
        self,
        env: dict[str, str],
        *,
        web_port: int,
        log_path: Path,
        procfile: Path = ROOT / "Procfile",
        concurrency: dict[str, int] | None = None,
    ) -> None:
        self.web_port = web_port
        self.log_path = log_path
        self._procfile = procfile
        self._concurrency = concurrency or {}
        run = uuid.uuid4().hex
        self._env = {**env, "NOTIFYHUB_FAULT_TEST_RUN": run}
        self._marker = f"NOTIFYHUB_FAULT_TEST_RUN={run}"
        self._honcho: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> ProcfileProcesses:
        # No .env file is read (--env /dev/null): the environment is the test's alone.
        command = [str(BIN / "honcho"), "start", "--procfile", str(self._procfile), "--env", os.devnull, "--no-colour"]
        command += ["--port", str(self.web_port)]
        if self._concurrency:
            command += ["--concurrency", ",".join(f"{name}={count}" for name, count in self._concurrency.items())]
        with self.log_path.open("ab") as log:
            self._honcho = subprocess.Popen(
                command, cwd=ROOT, env=self._env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        try:
            self._wait_for_web()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def _wait_for_web(self) -> None:
        deadline = time.monotonic() + 90
        while not port_open(self.web_port):
            if self._honcho is None or self._honcho.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"gunicorn did not listen on port {self.web_port}; see {self.log_path}")
            time.sleep(0.2)

    def worker_pid(self, timeout: float = 30.0) -> int:
        """A Celery worker's process, waiting for one while bin/keep-running starts it again."""
        deadline = time.monotonic() + timeout
        while not (workers := self.worker_pids()):
            if time.monotonic() > deadline:
                raise RuntimeError(f"no Celery worker process ran for {timeout:.0f} s; see {self.log_path}")
            time.sleep(0.1)
        return next(iter(workers.values()))

    def worker_pids(self) -> dict[str, int]:
        """The Celery worker processes running now, by honcho's name for each (worker.1, ...)."""
        return {
            _node_name(argv): pid
            for pid, argv in marked_processes(self._marker)
            # `python .venv/bin/celery --app notifyhub worker ...`; keep-running's and run-once's lines start with sh.
            if len(argv) > 2 and Path(argv[1]).name == "celery" and "worker" in argv
        }

    def wait_for_workers(self, count: int, timeout: float = 90.0) -> None:
        """Returns once ``count`` worker nodes of different names have said they consume."""
        deadline = time.monotonic() + timeout
        while len(set(WORKER_READY.findall(self.log_path.read_text(errors="replace")))) < count:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"fewer than {count} Celery workers were ready after {timeout:.0f} s; see {self.log_path}"
                )
            time.sleep(0.2)

    def stop(self) -> None:
        honcho, self._honcho = self._honcho, None
        if honcho is not None and honcho.poll() is None:
            honcho.terminate()  # it sends each process's group SIGTERM, then SIGKILL after 5 s
            try:
                honcho.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(honcho.pid, signal.SIGKILL)
                honcho.wait()
        end_marked_processes(self._marker)


def _node_name(argv: list[str]) -> str:
    """``--hostname worker.2@%h`` on a worker's command line: worker.2."""
    return argv[argv.index("--hostname") + 1].partition("@")[0] if "--hostname" in argv else "worker"
