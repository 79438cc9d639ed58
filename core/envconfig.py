"""Strict readers for settings taken from the environment.

A malformed value stops start-up with a message naming the variable, rather than
silently turning into a default (``DEBUG=ture`` must not mean ``False``).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_optional(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    if raw.lower() == "true":
        return True
    if raw.lower() == "false":
        return False
    raise ImproperlyConfigured(f"{name} must be 'true' or 'false', got {raw!r}")


def env_int(name: str, default: int, *, minimum: int = 0) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {value}")
    return value


def env_list(name: str, default: str = "") -> list[str]:
    raw = os.environ.get(name, default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_int_list(name: str, default: str) -> list[int]:
    items = env_list(name, default)
    try:
        values = [int(item) for item in items]
    except ValueError:
        raise ImproperlyConfigured(
            f"{name} must be a comma-separated list of integers, got {os.environ.get(name)!r}"
        ) from None
    if any(value < 0 for value in values):
        raise ImproperlyConfigured(f"{name} must not contain negative numbers")
    return values


def env_secret(name: str, *, state_dir: Path, generate: Callable[[], str] | None = None) -> str:
    """The secret from the environment, else one generated once into ``state_dir``.

    Local runs need no set-up, and the generated value survives restarts, so sessions
    and encrypted fields stay readable.
    """
    value = env_optional(name)
    if value:
        return value
    path = state_dir / name.lower()
    if path.exists():
        return path.read_text().strip()
    state_dir.mkdir(parents=True, exist_ok=True)
    value = generate() if generate else secrets.token_urlsafe(50)
    # Write-then-rename so two processes starting together never read a half-written key.
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(value)
    os.chmod(tmp, 0o600)
    if path.exists():  # another process won the race; use its value
        tmp.unlink()
        return path.read_text().strip()
    tmp.replace(path)
    return value


def env_provider_keys(names: list[str], *, known: list[str]) -> dict[str, str]:
    """``PLATFORM_<NAME>_API_KEY`` for each provider named in ``PLATFORM_PROVIDERS``."""
    keys = {}
    for name in names:
        if name not in known:
            raise ImproperlyConfigured(f"PLATFORM_PROVIDERS: unknown provider {name!r} (known: {', '.join(known)})")
        key = env_optional(f"PLATFORM_{name}_API_KEY")
        if key is None:
            raise ImproperlyConfigured(f"PLATFORM_PROVIDERS names {name}, but PLATFORM_{name}_API_KEY is not set")
        keys[name] = key
    return keys
