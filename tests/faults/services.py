"""What a fault test runs and breaks: a PostgreSQL server and the Procfile's processes of its own.

Redis is ``RedisServer`` (tests/servers.py), which stops and starts on one port. Each class
stops everything it started, whatever the test's outcome.
"""

from __future__ import annotations

import contextlib
import os
import pwd
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


class Postgres:
    """A PostgreSQL server on a free port, its cluster made by initdb in a temporary folder, run by pg_ctl.

    The server refuses to run as root: as root, every command runs as the postgres user, who owns the folder.
    """

    def __init__(self, bin_dir: Path, log_dir: Path) -> None:
        self.port = free_port()
        self._bin = bin_dir
        self._log_dir = log_dir
        self._root = Path(tempfile.mkdtemp(prefix="notifyhub-faults-pg-"))
        self._as_owner: list[str] = []
        if os.geteuid() == 0:
            owner = pwd.getpwnam(POSTGRES_USER)
            os.chown(self._root, owner.pw_uid, owner.pw_gid)
            self._as_owner = ["runuser", "-u", POSTGRES_USER, "--"]
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


class ProcfileProcesses:
    """The Procfile's processes (web, worker, beat) started by honcho, as `make run` starts them.

    honcho gives each process a session of its own and stops them all when it is stopped. Each also carries a
    marker in its environment, so any that outlived honcho (a worker that bin/keep-running was just starting
    again) is found in /proc and killed.
    """

    def __init__(self, env: dict[str, str], *, web_port: int, log_path: Path) -> None:
        self.web_port = web_port
        self.log_path = log_path
        run = uuid.uuid4().hex
        self._env = {**env, "NOTIFYHUB_FAULT_TEST_RUN": run}
        self._marker = f"NOTIFYHUB_FAULT_TEST_RUN={run}"
        self._honcho: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> ProcfileProcesses:
        # No .env file is read (--env /dev/null): the environment is the test's alone.
        command = [str(BIN / "honcho"), "start", "--procfile", "Procfile", "--env", os.devnull, "--no-colour"]
        command += ["--port", str(self.web_port)]
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
        """The Celery worker's process, waiting for it while bin/keep-running starts it again."""
        deadline = time.monotonic() + timeout
        while True:
            for pid, argv in marked_processes(self._marker):
                # `python .venv/bin/celery --app notifyhub worker ...`; keep-running's own line starts with sh.
                if len(argv) > 2 and Path(argv[1]).name == "celery" and "worker" in argv:
                    return pid
            if time.monotonic() > deadline:
                raise RuntimeError(f"no Celery worker process ran for {timeout:.0f} s; see {self.log_path}")
            time.sleep(0.1)

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
