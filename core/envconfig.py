"""Strict readers for settings taken from the environment.

A malformed value stops start-up with a message naming the variable, rather than
silently turning into a default (``DEBUG=ture`` must not mean ``False``).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path

from cryptography.fernet import Fernet
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


def env_required_outside_embedded_mode(name: str, local_default: str, *, embedded: bool) -> str:
    """The variable, or in embedded mode a default that serves a run on this machine; a deployment must say it."""
    value = env_optional(name)
    if value:
        return value
    if not embedded:
        raise ImproperlyConfigured(f"{name} must be set when REDIS_URL is (README.md, Production)")
    return local_default


def env_secret(name: str, *, state_dir: Path | None, generate: Callable[[], str] | None = None) -> str:
    """The secret from the environment; in embedded mode (``state_dir`` given) one generated once into it.

    Local runs need no set-up, and the generated value survives restarts, so sessions and encrypted fields stay
    readable. A deployment never generates one: two hosts would each make their own.
    """
    value = env_optional(name)
    if value:
        return value
    if state_dir is None:
        raise ImproperlyConfigured(
            f"{name} must be set when REDIS_URL is: NotifyHub generates it only for an embedded run "
            "(README.md, Production)"
        )
    return _stored_secret(state_dir / name.lower(), generate or (lambda: secrets.token_urlsafe(50)))


def _stored_secret(path: Path, generate: Callable[[], str]) -> str:
    """The secret in ``path``, made there first if missing; every process starting at once reads the same one.

    The value is written whole to a file of this process's, readable by the owner only from its creation, then
    hard-linked into place, which fails if the name exists: the first process's link wins, and the others read it.
    """
    if not path.exists():
        private_dir(path.parent)
        partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
        partial.unlink(missing_ok=True)  # left by a process of the same id that died mid-write
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as file:
            file.write(generate())
        try:
            os.link(partial, path)
        except FileExistsError:
            pass  # another process won; its value is read below
        finally:
            partial.unlink()
    return path.read_text().strip()


def private_dir(path: Path) -> Path:
    """``path`` as a folder only its owner may enter (made if missing, narrowed if an older run made it wider)."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.chmod(0o700)
    return path


def private_file(path: Path) -> Path:
    """``path`` as a file only its owner may read (made empty if missing), before anything writes to it."""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    path.chmod(0o600)
    return path


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


def env_fernet_keys(name: str, single: str, *, state_dir: Path | None) -> list[str]:
    """The Fernet keys listed in ``name``, newest first, or else the one key in ``single`` (``env_secret``: in
    embedded mode, one generated into ``state_dir``). Setting both is refused: which key encrypts would be a guess.
    """
    listed, alone = env_optional(name), env_optional(single)
    if listed and alone:
        raise ImproperlyConfigured(f"Set {name} or {single}, not both: {name} lists every key, the newest first")
    if listed:
        return _listed_fernet_keys(name)
    if alone is None and state_dir is None:
        raise ImproperlyConfigured(
            f"{name} or {single} must be set when REDIS_URL is: NotifyHub generates a key only for an embedded run "
            "(README.md, Production)"
        )
    return [_fernet_key(env_secret(single, state_dir=state_dir, generate=_new_fernet_key), single)]


def _listed_fernet_keys(name: str) -> list[str]:
    keys = env_list(name)
    if not keys:
        raise ImproperlyConfigured(f"{name} must list at least one Fernet key")
    return [_fernet_key(key, f"{name}: key {position} of {len(keys)}") for position, key in enumerate(keys, 1)]


def _new_fernet_key() -> str:
    return Fernet.generate_key().decode()


def _fernet_key(key: str, named: str) -> str:
    """``key``, once Fernet accepts it; the message names where it came from, never the key itself."""
    try:
        Fernet(key.encode())
    except ValueError:
        raise ImproperlyConfigured(f"{named} must be a Fernet key (32 url-safe base64-encoded bytes)") from None
    return key
