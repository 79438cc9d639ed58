"""Progress of an operator's command that works in batches, written to its stderr.

On a terminal one line is redrawn in place after every batch; elsewhere (a log, a pipe) a line is written every
few batches, so the log shows the run moving without a line per batch.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from types import TracebackType

from django.core.management.base import OutputWrapper

# "\r" goes back to the line's start; ESC [K clears what a longer line left behind it.
REDRAW, CLEAR_TO_END = "\r", "\x1b[K"


class Progress:
    """``12,000/1,000,000 jobs (1.2%) 3,400/s``: what is done of a total counted at the start, and the rate so far.

    The total is what the run expected to find; it may end above or below it as jobs come and go meanwhile.
    """

    def __init__(
        self,
        out: OutputWrapper,
        *,
        total: int,
        noun: str,
        every: int = 10,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.out, self.total, self.noun, self.every, self.clock = out, total, noun, every, clock
        self.tty = out.isatty()
        self.done = self.batches = 0
        self.started = clock()

    def advance(self, count: int) -> None:
        """Counts one batch of ``count``."""
        self.done += count
        self.batches += 1
        if self.tty:
            self._write(f"{REDRAW}{self.line()}{CLEAR_TO_END}")
        elif self.batches % self.every == 0:
            self._write(f"{self.line()}\n")

    def close(self) -> None:
        """Ends the bar with the final count on a line of its own."""
        if self.tty:
            self._write(f"{REDRAW}{self.line()}{CLEAR_TO_END}\n")
        elif self.batches % self.every or not self.batches:
            self._write(f"{self.line()}\n")

    def line(self) -> str:
        share = self.done / self.total if self.total else 1.0
        elapsed = self.clock() - self.started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        return f"{self.done:,}/{self.total:,} {self.noun} ({share:.1%}) {rate:,.0f}/s"

    def _write(self, text: str) -> None:
        # Plain text: the wrapper would colour stderr as an error on a terminal.
        self.out.write(text, style_func=str, ending="")
        self.out.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()
