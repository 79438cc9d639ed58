from __future__ import annotations

import argparse

from django.core.management.base import CommandParser

DEFAULT_BATCH_SIZE = 1000


def positive_int(text: str) -> int:
    """An argparse type: a whole number, 1 or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def add_batch_size(parser: CommandParser) -> None:
    parser.add_argument(
        "--batch-size",
        type=positive_int,
        default=DEFAULT_BATCH_SIZE,
        help=f"jobs a transaction (default {DEFAULT_BATCH_SIZE:,})",
    )
