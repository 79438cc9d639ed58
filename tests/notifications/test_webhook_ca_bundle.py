from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from notifications.delivery.http import _trusted_cas


def test_the_combined_ca_bundle_is_never_seen_half_written(ca_bundle: str, settings: Any, tmp_path: Path) -> None:
    settings.VAR_DIR = tmp_path
    expected = len(Path(_trusted_cas(ca_bundle)).read_bytes())
    for leftover in tmp_path.iterdir():
        leftover.unlink()

    def build_and_read(_: int) -> int:
        # Each session build writes the bundle; urllib3 then reads it, in any thread.
        return len(Path(_trusted_cas(ca_bundle)).read_bytes())

    with ThreadPoolExecutor(max_workers=8) as pool:
        sizes = set(pool.map(build_and_read, range(400)))

    assert sizes == {expected}
    assert [path.suffix for path in tmp_path.iterdir()] == [".pem"]
