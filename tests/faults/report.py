"""What a fault did to the jobs sent through it: the figures, the bars they are held to, and a table of them.

Each scenario's row is printed at the end of the test session (a "fault tests" section) and written to
``<var dir>/faults.md``.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from tests.fakes.receiver import Arrival
from tests.faults.load import Answer

# Every accepted job arrives within this many seconds of the end of the first fault it lived through.
BAR_SECONDS = 30.0
# What the API may answer while a service is down: accepted, rate-limited, or "come back in a moment".
ALLOWED_ANSWERS = frozenset({"202", "429", "503"})
HEADER = (
    "| fault | jobs | lost | stuck | duplicates | slowest job after the fault's end | API answers during the fault "
    "| notes |\n|---|---|---|---|---|---|---|---|"
)
ROWS: list[str] = []


@dataclass(frozen=True)
class Fault:
    """When a fault began and when it ended: a kill is a moment; a service is back once it answers again."""

    started_at: float
    ended_at: float


@dataclass(frozen=True)
class Delivery:
    """One request that arrived at the receiver: the job id it carried and the request number in its payload."""

    webhook_id: str
    number: int
    at: float

    @classmethod
    def of(cls, arrival: Arrival) -> Delivery:
        return cls(arrival.headers.get("X-Webhook-Id", ""), int(json.loads(arrival.body)["n"]), arrival.at)


@dataclass(frozen=True)
class Figures:
    fault: str
    answers: Counter[str]  # every answer of the load, by status
    answers_during: Counter[str]  # those to requests under way while the fault lasted
    jobs: int  # accepted (202)
    lost: list[str]  # accepted, never arrived
    stuck: dict[str, str]  # accepted, unfinished in the database at the end: id -> status
    duplicates: int  # arrivals beyond the first of each job, each with its job's X-Webhook-Id
    strays: list[Delivery]  # arrivals that were not their request's accepted job (a refused request, say)
    slowest: float  # seconds from the end of a job's first fault to its arrival: the slowest job's
    slowest_job: str | None
    notes: str = ""

    def problems(self) -> list[str]:
        """The bars this scenario missed, each with what missed it."""
        found = []
        if not self.jobs:
            found.append("the API accepted no job")
        if self.lost:
            found.append(f"{len(self.lost)} accepted job(s) never arrived, e.g. {self.lost[:3]}")
        if self.stuck:
            found.append(f"{len(self.stuck)} job(s) unfinished in the database, e.g. {list(self.stuck.items())[:3]}")
        if self.strays:
            found.append(f"{len(self.strays)} arrival(s) not their request's accepted job, e.g. {self.strays[:3]}")
        if self.slowest > BAR_SECONDS:
            found.append(
                f"job {self.slowest_job} arrived {self.slowest:.1f} s after its fault ended (bar {BAR_SECONDS:g} s)"
            )
        if unexpected := {status: n for status, n in self.answers.items() if status not in ALLOWED_ANSWERS}:
            found.append(f"API answers other than 202, 429 or 503: {unexpected}")
        return found

    def row(self) -> str:
        cells = [
            self.fault,
            f"{self.jobs:,}",
            f"{len(self.lost):,}",
            f"{len(self.stuck):,}",
            f"{self.duplicates:,}",
            f"{self.slowest:.1f} s",
            _counts(self.answers_during),
            self.notes,
        ]
        return f"| {' | '.join(cells)} |"


def figures(
    fault: str,
    answers: Sequence[Answer],
    arrivals: Iterable[Delivery],
    faults: Sequence[Fault],
    unfinished: dict[str, str],
    notes: str = "",
) -> Figures:
    jobs = {answer.job_id: answer for answer in answers if answer.job_id is not None}
    job_of_request = {answer.number: job_id for job_id, answer in jobs.items()}
    by_job: defaultdict[str, list[float]] = defaultdict(list)
    strays = []
    for delivery in arrivals:
        if job_of_request.get(delivery.number) == delivery.webhook_id:
            by_job[delivery.webhook_id].append(delivery.at)
        else:
            strays.append(delivery)
    start, end = min(f.started_at for f in faults), max(f.ended_at for f in faults)
    delays = {job_id: _delay(jobs[job_id].answered_at, min(times), faults) for job_id, times in by_job.items()}
    slowest_job = max(delays, key=delays.__getitem__, default=None)
    return Figures(
        fault=fault,
        answers=Counter(answer.status for answer in answers),
        answers_during=Counter(a.status for a in answers if a.sent_at <= end and a.answered_at >= start),
        jobs=len(jobs),
        lost=[job_id for job_id in jobs if job_id not in by_job],
        stuck=unfinished,
        duplicates=sum(len(times) - 1 for times in by_job.values()),
        strays=strays,
        slowest=delays[slowest_job] if slowest_job is not None else 0.0,
        slowest_job=slowest_job,
        notes=notes,
    )


def _delay(accepted_at: float, arrived_at: float, faults: Sequence[Fault]) -> float:
    """Seconds from the end of the first fault the job lived through (accepted before it ended, arrived after) to
    its arrival; from its acceptance if it lived through none."""
    lived_through = [f.ended_at for f in faults if accepted_at <= f.ended_at <= arrived_at]
    return arrived_at - min(lived_through, default=accepted_at)


def write_timeline(
    path: Path, started_at: float, answers: Sequence[Answer], arrivals: Iterable[Delivery], faults: Sequence[Fault]
) -> None:
    """Every request, its answer and its arrivals, and the faults, in seconds since the traffic began: to read a
    failure against the processes' logs."""

    def since(moment: float) -> float:
        return round(moment - started_at, 3)

    arrived: defaultdict[int, list[float]] = defaultdict(list)
    for delivery in arrivals:
        arrived[delivery.number].append(since(delivery.at))
    requests = [
        {
            "n": answer.number,
            "status": answer.status,
            "job": answer.job_id,
            "sent": since(answer.sent_at),
            "answered": since(answer.answered_at),
            "arrived": sorted(arrived[answer.number]),
        }
        for answer in sorted(answers, key=lambda answer: answer.number)
    ]
    timeline = {"faults": [[since(f.started_at), since(f.ended_at)] for f in faults], "requests": requests}
    path.write_text(json.dumps(timeline, indent=1))


def _counts(statuses: Counter[str]) -> str:
    return ", ".join(f"{status}: {count:,}" for status, count in sorted(statuses.items())) or "none"


def report_path() -> Path:
    return Path(settings.VAR_DIR) / "faults.md"


def start_report(path: Path) -> None:
    ROWS.clear()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + "\n")


def record(figures: Figures, path: Path) -> None:
    ROWS.append(figures.row())
    with path.open("a") as report:
        report.write(figures.row() + "\n")
