"""Monthly billing cycles, anchored on the day the account's current plan started."""

from __future__ import annotations

import calendar
from datetime import date


def add_months(anchor: date, months: int) -> date:
    """The same day ``months`` later, clamped to the month's last day (Jan 31 + 1 = Feb 28/29)."""
    month_index = anchor.month - 1 + months
    year, month = anchor.year + month_index // 12, month_index % 12 + 1
    day = min(anchor.day, calendar.monthrange(year, month)[1])
    return date(year, month, day)


def billing_period(*, anchor: date, today: date) -> tuple[date, date]:
    """The cycle containing ``today``: its first day and the day the quota resets."""
    months = (today.year - anchor.year) * 12 + (today.month - anchor.month)
    start = add_months(anchor, months)
    if start > today:
        months -= 1
        start = add_months(anchor, months)
    return start, add_months(anchor, months + 1)


def us_date(day: date) -> str:
    """M/D/YYYY without zero padding, as the quota message shows it."""
    return f"{day.month}/{day.day}/{day.year}"
