"""CPU accounting from /proc (Linux): how busy the machine is, and how much of that is the benchmark itself.

On a shared machine other work steals CPU from the servers under test and lowers their numbers. Measuring
the bench's own processes (gunicorn, its PostgreSQL backends, Redis, wrk) against the machine's total says
how much of the machine something else used during a run, so a disturbed run can be told from a clean one.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")


def machine_ticks() -> tuple[int, int]:
    """Total and idle (idle + iowait) CPU ticks of all CPUs since boot, from the first line of /proc/stat."""
    ticks = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return sum(ticks), ticks[3] + ticks[4]


def _stat_fields(pid: int | str) -> list[str] | None:
    try:
        # The fields after the command name, which is in parentheses and may itself hold spaces.
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None  # the process has ended


def process_ticks(pid: int) -> int:
    fields = _stat_fields(pid)
    return int(fields[11]) + int(fields[12]) if fields else 0


def process_group_ticks(group_id: int) -> int:
    """CPU ticks (user + system) used so far by the live processes of a process group."""
    total = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat_fields(entry.name)) and int(fields[2]) == group_id:
            total += int(fields[11]) + int(fields[12])
    return total


def waited_children_ticks() -> int:
    """CPU used by this process's children that have ended and been waited for (wrk runs)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return round((usage.ru_utime + usage.ru_stime) * TICKS_PER_SECOND)


def busy_share(*, seconds: float) -> float | None:
    """How busy all CPUs were over the next ``seconds``; None where /proc/stat is missing."""
    try:
        total_before, idle_before = machine_ticks()
        time.sleep(seconds)
        total_after, idle_after = machine_ticks()
    except OSError:
        time.sleep(seconds)
        return None
    elapsed = total_after - total_before
    return 1 - (idle_after - idle_before) / elapsed if elapsed else None


@dataclass(frozen=True)
class CpuSnapshot:
    total: int
    idle: int
    server: int
    helpers: dict[int, int]
    load_generator: int


def snapshot(*, server_group: int, helper_pids: Iterable[int]) -> CpuSnapshot:
    """CPU counters of the machine and of the bench's own processes.

    The server is gunicorn's process group; helpers are the PostgreSQL backends serving it and Redis; the load
    generator is wrk, counted once it has ended.
    """
    total, idle = machine_ticks()
    return CpuSnapshot(
        total=total,
        idle=idle,
        server=process_group_ticks(server_group),
        helpers={pid: process_ticks(pid) for pid in helper_pids},
        load_generator=waited_children_ticks(),
    )


@dataclass(frozen=True)
class CpuUse:
    server_seconds: float
    # Share of all CPUs that processes outside the bench used: 0 on a quiet machine.
    others_share: float | None


def cpu_use_between(before: CpuSnapshot, after: CpuSnapshot) -> CpuUse:
    # A backend that started during the run counts from zero; one that ended is lost (counted as others').
    helpers = sum(max(ticks - before.helpers.get(pid, 0), 0) for pid, ticks in after.helpers.items())
    server = after.server - before.server
    ours = server + helpers + after.load_generator - before.load_generator
    elapsed = after.total - before.total
    busy = elapsed - (after.idle - before.idle)
    others = max(0.0, (busy - ours) / elapsed) if elapsed else None
    return CpuUse(server_seconds=server / TICKS_PER_SECOND, others_share=others)
