"""The client is a package of its own (clients/python/): its pyproject.toml declares every package its code imports,
the versions this suite runs it with (requirements-dev.lock's) are within its ranges, and it imports nothing of the
service's, whose code its users do not have."""

from __future__ import annotations

import ast
import sys
import tomllib
from importlib.metadata import packages_distributions

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.client.sdk import SOURCE
from tests.test_dependencies import ROOT, _imported, pinned

PYPROJECT = SOURCE.parents[1] / "pyproject.toml"


def dependencies() -> list[Requirement]:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    return [Requirement(line) for line in project["dependencies"]]


def imported() -> set[str]:
    """The top-level modules the client's code imports by name; its own modules import each other relatively."""
    return (
        {
            module.split(".")[0]
            for path in SOURCE.rglob("*.py")
            for module in _imported(ast.parse(path.read_text(), str(path)))
        }
        - set(sys.stdlib_module_names)
        - {"__future__"}
    )


def test_every_package_the_client_imports_is_one_of_its_dependencies() -> None:
    declared = {canonicalize_name(requirement.name) for requirement in dependencies()}
    providers = packages_distributions()

    undeclared = [
        module
        for module in sorted(imported())
        if not {canonicalize_name(name) for name in providers.get(module, [])} & declared
    ]

    assert undeclared == []


def test_the_client_imports_nothing_of_the_service() -> None:
    service = {path.name for path in ROOT.iterdir() if (path / "__init__.py").exists()}

    assert sorted(imported() & service) == []


def test_the_locked_versions_are_within_the_clients_ranges() -> None:
    locked = pinned("requirements-dev.lock")

    outside = [
        f"{requirement} (locked {locked.get(canonicalize_name(requirement.name))})"
        for requirement in dependencies()
        if not requirement.specifier.contains(locked.get(canonicalize_name(requirement.name), "0"), prereleases=True)
    ]

    assert outside == []
