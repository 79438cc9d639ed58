"""The client's version: the package's (pyproject.toml reads it here) and its User-Agent's."""

VERSION = "1.0.0"
