"""Test settings: the service's own settings, with state kept apart from local runs."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("NOTIFYHUB_VAR_DIR", str(Path(__file__).resolve().parent.parent / "var" / "test"))

from notifyhub.settings import *  # noqa: F403

# Hashing cost is not under test; fast hashes keep account fixtures cheap.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
