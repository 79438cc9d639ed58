"""Imports run down: the shell, then the apps, then core, then providers (docs/architecture.md)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHELL, CORE, PROVIDERS = "notifyhub", "core", "providers"
# The developer tools (``manage.py listen``) are an app at the apps' top: nothing uses them, and of the other apps
# they use only accounts (``--account`` finds the signing secret to check with). What listen tells the webhook client
# goes through a file the settings name (WEBHOOK_LOCAL_TARGET_FILE), never an import either way.
DEVTOOLS, DEVTOOLS_USE = "devtools", {"accounts"}
APPS = (
    "accounts",
    "notifications",
    "domains",
    "webhooks_inbound",
    "suppressions",
    "event_endpoints",
    "email_templates",
    "customer_webhooks",
    "dashboard",
    "staff",
    DEVTOOLS,
)
LAYER = {SHELL: 0, **dict.fromkeys(APPS, 1), CORE: 2, PROVIDERS: 3}
# What one app may take from another: its models and what it does, never how it speaks HTTP.
# (``management``: the operators' commands find an account by email the same way in every app; ``routing``: the
# dashboard names the platform's sender as the send API decides it.)
APP_MODULES_SHARED = {"models", "services", "selectors", "routing", "plans", "access", "authentication", "throttle"}
APP_MODULES_SHARED |= {"management"}
# (``engine``, ``delivery``: an event endpoint's deliveries are claimed, leased, retried and sent as webhook jobs are,
# by the same code, docs/event-endpoints.md.)
APP_MODULES_SHARED |= {"engine", "delivery"}
# (``unsubscribe``: the one-click unsubscribe link an email with a topic carries and the page that reads it,
# docs/suppressions.md.)
APP_MODULES_SHARED |= {"unsubscribe"}
# (``messages``: the services sending, reading and recovering an app's messages, docs/customer-webhooks.md; the
# dashboard's apps pages read and recover them.)
APP_MODULES_SHARED |= {"messages"}
# (``portal``: the consumer portal's links and sessions, which the dashboard's portal pages read,
# docs/customer-webhooks.md.)
APP_MODULES_SHARED |= {"portal"}


def _import_statements(package: str) -> Iterator[tuple[Path, ast.Import | ast.ImportFrom]]:
    """Every absolute import statement in ``package``'s modules, migrations aside."""
    for path in (ROOT / package).rglob("*.py"):
        if "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import) or (isinstance(node, ast.ImportFrom) and node.module and node.level == 0):
                yield path, node


def _imports(package: str) -> Iterator[tuple[Path, str]]:
    for path, node in _import_statements(package):
        if isinstance(node, ast.ImportFrom):
            yield path, str(node.module)
        else:
            yield from ((path, alias.name) for alias in node.names)


def _module_imports(package: str) -> Iterator[tuple[str, str]]:
    """(importing module, imported module) within ``package``; ``from a import b`` names module ``a.b`` if it is one."""
    for path, node in _import_statements(package):
        source = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        if isinstance(node, ast.Import):
            yield from ((source, alias.name) for alias in node.names)
            continue
        for alias in node.names:
            submodule = f"{node.module}.{alias.name}"
            is_module = (ROOT / submodule.replace(".", "/")).with_suffix(".py").exists()
            yield source, submodule if is_module else str(node.module)


def _in_cycle(depends: dict[str, set[str]]) -> list[str]:
    """The names left once every name whose dependencies are all taken is taken, over and over: none without a
    cycle. A dependency that is not itself a key is outside and taken already."""
    taken: set[str] = set()
    while ready := {
        name for name, targets in depends.items() if name not in taken and targets & depends.keys() <= taken
    }:
        taken |= ready
    return sorted(depends.keys() - taken)


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(f"{package}.")


def _edges() -> set[tuple[str, str, str]]:
    """(importing package, imported package, imported module) between the project's own packages."""
    return {
        (package, module.split(".")[0], module)
        for package in LAYER
        for _, module in _imports(package)
        if module.split(".")[0] in LAYER and module.split(".")[0] != package
    }


@pytest.mark.parametrize("package", list(LAYER))
def test_a_package_imports_only_what_lies_below_it(package: str) -> None:
    upward = sorted(
        module for source, target, module in _edges() if source == package and LAYER[target] < LAYER[package]
    )

    assert upward == []


def test_an_app_borrows_no_other_apps_views_or_serializers() -> None:
    borrowed = sorted(
        f"{source} -> {module}"
        for source, target, module in _edges()
        if source in APPS and target in APPS and module.split(".")[1] not in APP_MODULES_SHARED
    )

    assert borrowed == []


def test_the_apps_import_each_other_without_a_cycle() -> None:
    depends = {app: {target for source, target, _ in _edges() if source == app and target in APPS} for app in APPS}

    assert _in_cycle(depends) == [], f"the apps import each other in a cycle: {depends}"


def test_no_package_imports_the_developer_tools() -> None:
    importers = sorted(f"{source} -> {module}" for source, target, module in _edges() if target == DEVTOOLS)

    assert importers == []


def test_the_developer_tools_use_no_other_app_than_accounts() -> None:
    used = sorted(
        module
        for source, target, module in _edges()
        if source == DEVTOOLS and target in APPS and target not in DEVTOOLS_USE
    )

    assert used == []


def test_the_shell_holds_only_the_project_files() -> None:
    modules = sorted(path.name for path in (ROOT / SHELL).glob("*.py"))

    assert modules == ["__init__.py", "celery.py", "settings.py", "urls.py", "wsgi.py"]


def test_the_running_service_imports_nothing_of_djangos_test_tools() -> None:
    imported = sorted(
        f"{path.relative_to(ROOT)} -> {module}"
        for package in LAYER
        for path, module in _imports(package)
        if module == "django.test" or module.startswith("django.test.")
    )

    assert imported == []


# The rooms of notifications (docs/architecture.md, "Inside notifications"): the entry points (views, tasks,
# commands) over the services (batches among them), the services over the engine, the engine over delivery, and the
# routing rules under all of them, read alike when a send is accepted and when it is attempted. A room never imports
# one above it.
ROOMS_ABOVE = {
    "notifications.engine": (
        "notifications.batches",
        "notifications.services",
        "notifications.tasks",
        "notifications.views",
    ),
    "notifications.delivery": (
        "notifications.batches",
        "notifications.engine",
        "notifications.services",
        "notifications.tasks",
    ),
    "notifications.routing": (
        "notifications.batches",
        "notifications.delivery",
        "notifications.engine",
        "notifications.services",
    ),
}


@pytest.mark.parametrize("room", list(ROOMS_ABOVE))
def test_a_room_of_notifications_imports_none_above_it(room: str) -> None:
    upward = sorted(
        f"{source} -> {target}"
        for source, target in _module_imports("notifications")
        if _within(source, room) and any(_within(target, above) for above in ROOMS_ABOVE[room])
    )

    assert upward == []


def test_the_modules_of_notifications_import_each_other_without_a_cycle() -> None:
    depends: dict[str, set[str]] = {}
    for source, target in _module_imports("notifications"):
        targets = depends.setdefault(source, set())
        if _within(target, "notifications") and target != source:
            targets.add(target)

    assert _in_cycle(depends) == []
