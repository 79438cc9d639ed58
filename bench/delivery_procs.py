"""Processes for bench/delivery.py: start each in a process group of its own, stop the group, count its CPU.

Every server and worker the bench starts runs in a new session, so Ctrl-C reaches only the bench, whose
``finally`` blocks stop each group (SIGTERM, then SIGKILL): nothing outlives a run, even an interrupted one.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import certifi
import trustme

from bench.common import BenchError, port_open, stop_group

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class TlsFiles:
    ca: Path  # the bench CA alone: what the app gets as WEBHOOK_CA_BUNDLE
    bundle: Path  # certifi's CAs plus the bench CA: what the app builds from it, given to the floor too
    cert: Path  # the receiver's chain
    key: Path


def make_tls_files(directory: Path) -> TlsFiles:
    """A throw-away CA and a certificate for 127.0.0.1 signed by it, as PEM files."""
    directory.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA()
    issued = ca.issue_cert("127.0.0.1", "localhost")
    files = TlsFiles(
        ca=directory / "ca.pem",
        bundle=directory / "ca-bundle.pem",
        cert=directory / "receiver-cert.pem",
        key=directory / "receiver-key.pem",
    )
    ca.cert_pem.write_to_path(str(files.ca))
    files.cert.write_bytes(b"".join(pem.bytes() for pem in issued.cert_chain_pems))
    issued.private_key_pem.write_to_path(str(files.key))
    # The same concatenation as notifications.delivery.http._trusted_cas, so both sides load the same file.
    files.bundle.write_text(Path(certifi.where()).read_text() + "\n" + files.ca.read_text())
    return files


def require_free_port(port: int, what: str) -> None:
    if port_open(port):
        raise BenchError(f"port {port} for the {what} is already in use; pick another (see --help)")


@contextlib.contextmanager
def running(name: str, command: list[str], *, cwd: Path, env: dict[str, str], log_path: Path) -> Iterator[Group]:
    """Runs ``command`` in a session of its own, output to ``log_path``; stops its group on exit."""
    with log_path.open("ab") as log:
        log.write(f"\n=== {time.strftime('%H:%M:%S')} {' '.join(command)}\n".encode())
        log.flush()
        process = subprocess.Popen(
            command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            yield Group(name=name, process=process, log_path=log_path)
        finally:
            stop_group(process)


@dataclass(frozen=True)
class Group:
    name: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def check_alive(self) -> None:
        if self.process.poll() is not None:
            raise BenchError(f"{self.name} exited with status {self.process.returncode}; see {self.log_path}")

    def cpu_seconds(self) -> float:
        """CPU time (user + system) of every live process in the group, children included."""
        return _cpu_seconds(lambda _command, fields: int(fields[2]) == self.process.pid)


@dataclass(frozen=True)
class Groups:
    """Process groups measured as one: a Procfile process type scaled to several processes."""

    members: tuple[Group, ...]

    @property
    def log_path(self) -> Path:
        return self.members[0].log_path

    def check_alive(self) -> None:
        for member in self.members:
            member.check_alive()

    def cpu_seconds(self) -> float:
        return sum(member.cpu_seconds() for member in self.members)


def _stat_fields(stat: str) -> tuple[str, list[str]]:
    """The command name and the fields after it; the name is in parentheses and may hold spaces."""
    open_paren, close_paren = stat.index("("), stat.rindex(")")
    # fields[0] is the state, fields[2] the process group, fields[11] utime, fields[12] stime.
    return stat[open_paren + 1 : close_paren], stat[close_paren + 2 :].split()


def _cpu_seconds(match: Callable[[str, list[str]], bool]) -> float:
    """Summed CPU time of the live processes whose command name and /proc stat fields satisfy ``match``."""
    total = 0
    for stat_path in Path("/proc").glob("[0-9]*/stat"):
        try:
            command, fields = _stat_fields(stat_path.read_text())
        except (OSError, ValueError):
            continue  # the process ended while we looked
        if match(command, fields):
            total += int(fields[11]) + int(fields[12])
    return total / CLOCK_TICKS


def command_cpu_seconds(prefix: str) -> float:
    """CPU time of every process whose command name starts with ``prefix``, with that of children they reaped.

    PostgreSQL forks a backend per connection; the postmaster reaps it, so a backend that already exited
    still counts (as the postmaster's cutime and cstime). Other clients' queries count too.
    """
    total = 0
    for stat_path in Path("/proc").glob("[0-9]*/stat"):
        try:
            command, fields = _stat_fields(stat_path.read_text())
        except (OSError, ValueError):
            continue
        if command.startswith(prefix):
            total += sum(int(value) for value in fields[11:15])
    return total / CLOCK_TICKS


def self_cpu_seconds() -> float:
    """CPU time of this process (the bench: job creation, enqueueing, the load client)."""
    times = os.times()
    return times.user + times.system


def machine_ticks() -> tuple[int, int]:
    """Total and idle (idle + iowait) CPU ticks since boot, from the first line of /proc/stat."""
    ticks = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return sum(ticks), ticks[3] + ticks[4]
