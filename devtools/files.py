"""Writing the files listen shares with other processes while they may be reading them."""

from __future__ import annotations

import os
from pathlib import Path


def write_whole(path: Path, content: bytes, *, mode: int = 0o644) -> None:
    """Writes ``content`` beside ``path``, then renames it into place: a reader never sees half a file."""
    partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    partial.write_bytes(content)
    partial.chmod(mode)
    os.replace(partial, path)
