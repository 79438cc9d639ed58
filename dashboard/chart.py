"""The home page's chart of completed and failed jobs per day, drawn on the server as SVG.

The template (dashboard/_outcome_chart.html) only places what this computes, so the page needs
no script and no library: one stacked bar a day, completed below failed, on a scale rounded up
to a number a reader can take in at a glance.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from notifications.selectors import DayOutcomes

WIDTH, HEIGHT = 600, 180
# Room under the bars for the date labels and above them for the scale's top, which is written at the
# left end of its line: beside the bars it would need room for any number of digits.
PLOT_LEFT, PLOT_BOTTOM, PLOT_TOP = 2, 156, 24
PLOT_HEIGHT = PLOT_BOTTOM - PLOT_TOP
BAR_GAP = 0.25  # the share of each day's slot left empty between bars
LABEL_EVERY = 7  # days between date labels; the last day is always labelled


@dataclass(frozen=True)
class Bar:
    x: float
    width: float
    completed_top: float
    completed_height: float
    failed_top: float
    failed_height: float
    title: str


@dataclass(frozen=True)
class Label:
    x: float
    text: str
    # The last day's label ends at the bar's right edge, so it stays inside the drawing.
    anchor: str = "middle"


@dataclass(frozen=True)
class OutcomeChart:
    width: int
    height: int
    plot_left: int
    plot_top: int
    plot_bottom: int
    plot_height: int
    scale_max: int
    bars: list[Bar]
    labels: list[Label]
    completed: int
    failed: int


def scale_max(largest: int) -> int:
    """The smallest of 1, 2 or 5 times a power of ten that is at least ``largest`` (and at least 5)."""
    step = 1
    while True:
        for multiple in (1, 2, 5):
            if multiple * step >= max(largest, 5):
                return multiple * step
        step *= 10


def outcome_chart(days: Sequence[DayOutcomes]) -> OutcomeChart:
    top = scale_max(max((day.completed + day.failed for day in days), default=0))
    slot = (WIDTH - PLOT_LEFT) / max(len(days), 1)
    bars, labels = [], []
    for index, day in enumerate(days):
        x = PLOT_LEFT + index * slot
        completed_height = PLOT_HEIGHT * day.completed / top
        failed_height = PLOT_HEIGHT * day.failed / top
        bars.append(
            Bar(
                x=round(x + slot * BAR_GAP / 2, 1),
                width=round(slot * (1 - BAR_GAP), 1),
                completed_top=round(PLOT_BOTTOM - completed_height, 1),
                completed_height=round(completed_height, 1),
                failed_top=round(PLOT_BOTTOM - completed_height - failed_height, 1),
                failed_height=round(failed_height, 1),
                title=f"{day.day:%b} {day.day.day}: {day.completed} completed, {day.failed} failed",
            )
        )
        if index == len(days) - 1:
            labels.append(Label(x=round(x + slot, 1), text=f"{day.day:%b} {day.day.day}", anchor="end"))
        elif (len(days) - 1 - index) % LABEL_EVERY == 0:
            labels.append(Label(x=round(x + slot / 2, 1), text=f"{day.day:%b} {day.day.day}"))
    return OutcomeChart(
        width=WIDTH,
        height=HEIGHT,
        plot_left=PLOT_LEFT,
        plot_top=PLOT_TOP,
        plot_bottom=PLOT_BOTTOM,
        plot_height=PLOT_HEIGHT,
        scale_max=top,
        bars=bars,
        labels=labels,
        completed=sum(day.completed for day in days),
        failed=sum(day.failed for day in days),
    )
