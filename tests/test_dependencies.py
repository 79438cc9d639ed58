"""The dependency lists, their lock files and the code's imports agree (README.md, "Dependencies").

requirements.txt and requirements-dev.txt are the lists people edit; ``make lock`` compiles them into
requirements.lock and requirements-dev.lock, exact versions with hashes, which every install uses. These checks read
the files, the code and the installed packages' metadata, nothing from the network: a list edited without
``make lock``, a lock edited by hand, or an import of a package no list names (one that only arrives as another's
dependency included) fails here.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from functools import cache
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
RUNTIME, DEV = "requirements.txt", "requirements-dev.txt"
LOCK_OF = {RUNTIME: "requirements.lock", DEV: "requirements-dev.lock"}
# Only the tests and the benchmarks import these folders' code: what they import may come from requirements-dev.txt.
DEV_ONLY = {"tests", "bench"}
# Folders of the clone that hold no code of the project's.
# Not the service's code: clients/ holds packages of their own, each declaring its imports in its own pyproject.toml
# (tests/client/test_package.py checks the Python client's).
NOT_CODE = {"var", "node_modules", "static", "templates", "docs", "clients"}
RELOCK = "edit the list if need be, then run `make lock` and commit the lists and the lock files together"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+?)(?: \\)?$")
HASH = re.compile(r"^ +--hash=sha256:[0-9a-f]{64}(?: \\)?$")


def declared(name: str) -> list[Requirement]:
    """The requirements of one list, following its ``-r`` includes; those whose marker excludes this Python left out."""
    requirements = []
    for raw in (ROOT / name).read_text().splitlines():
        line = re.sub(r"(^|\s)#.*", "", raw).strip()
        if not line:
            continue
        if line.startswith(("-r ", "--requirement ")):
            requirements += declared(line.split(maxsplit=1)[1])
            continue
        if line.startswith("-"):  # another option (an index, a constraint file): no package
            continue
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate():
            requirements.append(requirement)
    return requirements


@cache
def pinned(lock: str) -> dict[str, Version]:
    """What a lock file installs, by canonical name; every line is a pin with its hashes, a hash, or a comment."""
    pins: dict[str, Version] = {}
    hashes: dict[str, int] = {}
    current = None
    for number, line in enumerate((ROOT / lock).read_text().splitlines(), 1):
        if match := PIN.match(line):
            current = canonicalize_name(match[1])
            assert current not in pins, f"{lock}:{number}: {match[1]} is pinned twice"
            pins[current], hashes[current] = Version(match[2]), 0
        elif HASH.match(line) and current is not None:
            hashes[current] += 1
        else:
            assert not line.strip() or line.lstrip().startswith("#"), f"{lock}:{number}: not a pin: {line!r}; {RELOCK}"
    unhashed = sorted(name for name, count in hashes.items() if not count)
    assert not unhashed, f"{lock} pins {unhashed} without hashes; {RELOCK}"
    return pins


@pytest.mark.parametrize("listed", [RUNTIME, DEV])
def test_every_listed_package_is_locked_within_its_range(listed: str) -> None:
    lock, problems = LOCK_OF[listed], []
    pins = pinned(LOCK_OF[listed])
    for requirement in declared(listed):
        version = pins.get(canonicalize_name(requirement.name))
        if version is None:
            problems.append(f"{requirement} is not in {lock}")
        elif not requirement.specifier.contains(version, prereleases=True):
            problems.append(f"{lock} pins {requirement.name} {version}, outside {requirement}")
    assert not problems, "\n".join([*problems, RELOCK])


def test_the_dev_lock_holds_the_runtime_lock_at_the_same_versions() -> None:
    """The tests run what production runs."""
    runtime, dev = pinned(LOCK_OF[RUNTIME]), pinned(LOCK_OF[DEV])
    differ = {name: (str(version), str(dev.get(name))) for name, version in runtime.items() if dev.get(name) != version}
    assert not differ, f"(requirements.lock, requirements-dev.lock) differ for {differ}; {RELOCK}"


def test_every_imported_package_is_declared() -> None:
    """Each third-party import is in requirements.txt, or for the tests and benchmarks in either list: directly,
    never only as another package's dependency, which a new release of that package may drop."""
    providers = packages_distributions()
    allowed = {
        RUNTIME: {canonicalize_name(r.name) for r in declared(RUNTIME)},
        DEV: {canonicalize_name(r.name) for r in declared(DEV)},
    }
    missing = set()
    for path, module in _third_party_imports():
        listed = DEV if path.relative_to(ROOT).parts[0] in DEV_ONLY else RUNTIME
        distributions = {canonicalize_name(name) for name in providers.get(module, [])}
        if not distributions & allowed[listed]:
            names = ", ".join(sorted(distributions)) or "not installed"
            missing.add(f"{path.relative_to(ROOT)} imports {module} ({names}): declare it in {listed}")
    assert not missing, "\n".join([*sorted(missing), RELOCK])


def _third_party_imports() -> Iterator[tuple[Path, str]]:
    """(file, top-level module) for every import of code outside the standard library and this project, with the
    settings' app and middleware paths, which Django imports."""
    folders = [p for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith(".") and p.name not in NOT_CODE]
    files = [*ROOT.glob("*.py"), *(path for folder in folders for path in folder.rglob("*.py"))]
    first_party = {path.relative_to(ROOT).parts[0].removesuffix(".py") for path in files}
    for path in files:
        for module in _imported(ast.parse(path.read_text(), str(path))):
            top = module.split(".")[0]
            if top not in sys.stdlib_module_names and top not in first_party and top != "__future__":
                yield path, top


def _imported(tree: ast.AST) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module
        elif (
            isinstance(node, ast.Call)
            and isinstance(func := node.func, ast.Attribute | ast.Name)
            and (func.attr if isinstance(func, ast.Attribute) else func.id) in {"import_module", "importorskip"}
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield node.args[0].value
        elif (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id in {"INSTALLED_APPS", "MIDDLEWARE"} for t in node.targets)
            and isinstance(node.value, ast.List)
        ):
            yield from (e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str))
