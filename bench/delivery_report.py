"""Results of bench/delivery.py and how they are printed: one row per worker run, ratios, latency."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from statistics import median

# The targets.
MIN_FLOOR_SHARE = 0.60
MAX_P50_MS = 20.0
MAX_P99_MS = 100.0
# Above this share of the CPUs busy in the idle second before a run, the report warns the box was not quiet.
BUSY_WARNING = 0.15


@dataclass(frozen=True)
class WorkerConfig:
    pool: str  # threads | prefork
    concurrency: int
    # Worker processes started with the same command, as a platform scales a Procfile process type.
    processes: int = 1

    @classmethod
    def parse(cls, text: str) -> WorkerConfig:
        """``threads:8`` or ``prefork:4``; ``threads:8:2`` runs two such workers side by side."""
        pool, *numbers = text.strip().split(":")
        if pool not in ("threads", "prefork") or len(numbers) not in (1, 2) or not all(n.isdigit() for n in numbers):
            raise ValueError(f"worker config {text!r} is not threads:N, prefork:N or POOL:N:PROCESSES")
        config = cls(pool, *(int(number) for number in numbers))
        if config.concurrency < 1 or config.processes < 1:
            raise ValueError(f"worker config {text!r} needs a concurrency and a process count of at least 1")
        return config

    @property
    def label(self) -> str:
        label = f"{self.pool} x{self.concurrency}"
        return label if self.processes == 1 else f"{self.processes} * {label}"

    @property
    def celery_args(self) -> list[str]:
        return ["--pool", self.pool, "--concurrency", str(self.concurrency)]


@dataclass(frozen=True)
class Throughput:
    """One worker delivering ``jobs`` webhooks that were queued all at once."""

    target: str  # app | floor
    config: WorkerConfig
    round_number: int  # app and floor runs of one round follow each other
    jobs: int
    arrived: int
    duplicates: int
    strangers: int
    seconds: float  # from the first enqueue to the last first arrival
    worker_cpu: float  # CPU seconds of the worker's process group over the run
    receiver_cpu: float
    postgres_cpu: float
    busy: float  # share of the machine's CPUs busy over the run
    busy_before: float  # the same, in the idle second before the run
    signatures: tuple[int, int]  # sampled requests whose signature and body checked out, of those sampled
    unsigned: int
    db_completed: int | None = None  # app only: jobs the database shows completed
    db_connections: int | None = None  # app only: PostgreSQL sessions opened during the run
    warm_missing: int = 0  # warm-up jobs that did not arrive (a failed first attempt waits minutes to retry)

    @property
    def missing(self) -> int:
        return self.jobs - self.arrived

    @property
    def rate(self) -> float:
        return self.arrived / self.seconds if self.seconds > 0 else 0.0

    def per_delivery_ms(self, cpu_seconds: float) -> float:
        return cpu_seconds / self.arrived * 1000 if self.arrived else math.nan


@dataclass(frozen=True)
class Latency:
    config: WorkerConfig
    rate: float  # requested jobs/s
    achieved_rate: float
    seconds: float
    accepted: int
    arrived: int
    duplicates: int
    errors: Counter[str]
    to_arrival_ms: list[float]  # per arrived job: first arrival minus the client reading the 202
    accept_ms: list[float]  # per accepted job: request written to 202 read
    signatures: tuple[int, int]
    unsigned: int
    db_completed: int
    busy: float  # machine CPU share while the load ran
    busy_before: float
    cpu_seconds: dict[str, float]  # per process group, from the first request to the last arrival

    @property
    def missing(self) -> int:
        return self.accepted - self.arrived


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile; NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(share * len(ordered)) - 1))]


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def _throughput_row(row: Throughput) -> str:
    db = "" if row.db_completed is None else f"{row.db_completed:>6}"
    connections = "" if row.db_connections is None else f"{row.db_connections:>6}"
    return (
        f"{row.config.label:<18}{row.target:<6}{row.round_number:>2}{row.rate:>9.1f}{row.seconds:>8.2f}{row.jobs:>7}{row.arrived:>8}"
        f"{row.duplicates:>5}{row.missing:>8}{row.per_delivery_ms(row.worker_cpu):>8.2f}"
        f"{row.per_delivery_ms(row.postgres_cpu):>7.2f}{row.per_delivery_ms(row.receiver_cpu):>7.2f}{row.busy:>6.0%}{row.busy_before:>7.0%}"
        f"{row.signatures[0]:>4}/{row.signatures[1]:<3}{db:>7}{connections:>7}"
    )


def print_throughput(rows: list[Throughput]) -> None:
    print(
        f"{'worker':<18}{'target':<6}{'#':>2}{'deliv/s':>9}{'wall s':>8}{'jobs':>7}{'arrived':>8}{'dup':>5}"
        f"{'missing':>8}{'wkr ms':>8}{'pg ms':>7}{'rcv ms':>7}{'busy':>6}{'before':>7}{'sig':>8}"
        f"{'db ok':>7}{'db con':>7}"
    )
    for row in rows:
        print(_throughput_row(row))
    print()
    for config in dict.fromkeys(row.config for row in rows):
        _print_ratio(config, [row for row in rows if row.config == config])


def _print_ratio(config: WorkerConfig, rows: list[Throughput]) -> None:
    """The median over rounds of app/floor, each app run against the floor run of its round.

    Pairing runs that follow each other cancels a slow spell of the machine that spans both.
    """
    floors = {row.round_number: row for row in rows if row.target == "floor"}
    pairs = [(row, floors[row.round_number]) for row in rows if row.target == "app" and row.round_number in floors]
    if not pairs:
        return
    ratios = [app.rate / floor.rate if floor.rate else 0.0 for app, floor in pairs]
    share = median(ratios)
    complete = all(row.missing == 0 for row in rows)
    duplicates = sum(row.duplicates for row in rows)
    print(
        f"app/floor deliveries/s ({config.label}): {share:6.1%}   target >= {MIN_FLOOR_SHARE:.0%}   "
        f"{_verdict(share >= MIN_FLOOR_SHARE)};  every job arrived: {_verdict(complete)} (duplicates {duplicates})"
    )
    if len(ratios) > 1:
        print(f"  per round: {', '.join(f'{ratio:.1%}' for ratio in ratios)} (the verdict takes the median)")


def print_latency(result: Latency) -> None:
    p50, p95, p99 = (percentile(result.to_arrival_ms, share) for share in (0.50, 0.95, 0.99))
    worst = max(result.to_arrival_ms, default=math.nan)
    accept_p50, accept_p99 = (percentile(result.accept_ms, share) for share in (0.50, 0.99))
    print(
        f"Latency: {result.rate:g} jobs/s requested for {result.seconds:g} s through the API "
        f"({result.achieved_rate:.1f}/s achieved), worker {result.config.label}"
    )
    print("  accept-to-arrival = arrival at the receiver - the client reading the 202 (same monotonic clock)")
    print(f"{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'max ms':>9}{'arrived/accepted':>18}{'dup':>5}{'errors':>8}")
    print(
        f"{p50:>9.1f}{p95:>9.1f}{p99:>9.1f}{worst:>9.1f}{f'{result.arrived}/{result.accepted}':>18}"
        f"{result.duplicates:>5}{sum(result.errors.values()):>8}"
    )
    print(
        f"  API accept (request written to 202 read): p50 {accept_p50:.1f} ms, p99 {accept_p99:.1f} ms; "
        f"db completed {result.db_completed}/{result.accepted}; signatures {result.signatures[0]}/"
        f"{result.signatures[1]} sampled ok, unsigned {result.unsigned}"
    )
    print(f"  machine busy: {result.busy:.0%} during the load, {result.busy_before:.0%} in the idle second before")
    if result.accepted:
        shares = ", ".join(
            f"{name} {seconds / result.accepted * 1000:.2f}" for name, seconds in result.cpu_seconds.items()
        )
        print(f"  CPU ms per job: {shares}")
    if result.errors:
        print(f"  errors: {dict(result.errors)}")
    if result.achieved_rate < 0.95 * result.rate:
        print("  note: the client fell behind the requested rate (the API answered too slowly for its threads).")
    print()
    print(f"p50 accept-to-arrival  {p50:>6.1f} ms   target < {MAX_P50_MS:.0f} ms    {_verdict(p50 < MAX_P50_MS)}")
    print(f"p99 accept-to-arrival  {p99:>6.1f} ms   target < {MAX_P99_MS:.0f} ms   {_verdict(p99 < MAX_P99_MS)}")
    every = result.missing == 0 and not result.errors
    print(
        f"every accepted job arrived   {result.arrived}/{result.accepted}, duplicates {result.duplicates}   "
        f"{_verdict(every)}"
    )


def print_notes(rows: list[Throughput]) -> None:
    if any(row.busy_before > BUSY_WARNING for row in rows):
        print("  note: other processes kept the CPUs busy before a run (column 'before'); re-run when quiet.")
    if any(row.strangers for row in rows):
        print("  note: requests for ids not queued in that run arrived (left over from an earlier run).")
    for row in rows:
        if row.warm_missing:
            print(f"  note: {row.target} {row.config.label}: {row.warm_missing} warm-up job(s) did not arrive.")
    if any(row.unsigned for row in rows):
        print("  note: some deliveries arrived without a signature.")
