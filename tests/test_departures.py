"""docs/departures.md is the ledger of every place the code leaves the framework's road, and the code keeps to it.

Found in the code: a ``cursor.execute`` (or ``.raw``, ``.extra``, ``RawSQL``), a string that is an SQL statement, and
a method defined on one of our classes under a private name (``_name``) that a framework base class already defines.
Each must stand in a file a ledger row names (an override, as ``file (Class._name)``), and each row's files carry the
comment line that names the row.
"""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LEDGER = ROOT / "docs" / "departures.md"
# Every package of the product, found in the tree: an app added later is held to the ledger from its first commit.
NOT_THE_PRODUCT = ("tests", "bench")
PACKAGES = tuple(
    sorted(init.parent.name for init in ROOT.glob("*/__init__.py") if init.parent.name not in NOT_THE_PRODUCT)
)
SQL_STATEMENT = re.compile(
    r"^\s*(SELECT\s.+\sFROM\s|INSERT\s+INTO\s|UPDATE\s+\S+\s+SET\s|DELETE\s+FROM\s|WITH\s+\w+\s+AS\s*\()", re.DOTALL
)
RAW_SQL_CALLS = {"execute", "executemany", "raw", "extra"}
ROW = re.compile(r"^\| `(?P<row>[a-z0-9-]+)` \| (?P<where>[^|]+) \|", re.MULTILINE)
PATH_AND_NAMES = re.compile(r"`(?P<path>[\w/]+\.py)`(?: \((?P<names>[^)]*)\))?")


def ledger() -> dict[str, dict[str, set[str]]]:
    """Each row: the files it names, each with the private names listed beside it."""
    rows: dict[str, dict[str, set[str]]] = {}
    for match in ROW.finditer(LEDGER.read_text()):
        places = rows.setdefault(match["row"], {})
        for place in PATH_AND_NAMES.finditer(match["where"]):
            places[place["path"]] = set(re.findall(r"`(\w+\.\w+)`", place["names"] or ""))
    return rows


def source_files() -> Iterator[Path]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def _statement_text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):  # an f-string: its literal parts, a placeholder for each value
        return "".join(part.value if isinstance(part, ast.Constant) else "x" for part in node.values)
    return None


def _is_raw_sql(node: ast.AST) -> bool:
    text = _statement_text(node)
    if text is not None:
        return bool(SQL_STATEMENT.match(text))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr in RAW_SQL_CALLS
    return isinstance(node, ast.Name) and node.id == "RawSQL"


def raw_sql_lines(path: Path) -> list[int]:
    return [node.lineno for node in ast.walk(ast.parse(path.read_text())) if _is_raw_sql(node)]


def private_overrides(path: Path) -> list[str]:
    """``Class._name`` for each private method this file defines that a framework base class defines too."""
    module = importlib.import_module(".".join(path.relative_to(ROOT).with_suffix("").parts))
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.ClassDef):
            continue
        cls = getattr(module, node.name, None)
        framework_bases = [base for base in getattr(cls, "__mro__", ())[1:] if not _ours(base)]
        for item in node.body:
            name = getattr(item, "name", "")
            private_method = isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and _is_private(name)
            if private_method and any(name in vars(base) for base in framework_bases):
                found.append(f"{node.name}.{name}")
    return found


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _ours(cls: type) -> bool:
    return cls.__module__.split(".")[0] in PACKAGES


def relative(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_every_raw_sql_statement_stands_in_a_file_the_ledger_names() -> None:
    ledgered = {path for places in ledger().values() for path in places}

    outside = [
        f"{relative(path)}:{line}"
        for path in source_files()
        if relative(path) not in ledgered
        for line in raw_sql_lines(path)
    ]

    assert outside == []


def test_every_override_of_a_frameworks_private_method_is_a_ledger_entry() -> None:
    ledgered = {(path, name) for places in ledger().values() for path, names in places.items() for name in names}

    unlisted = [
        f"{relative(path)} ({name})"
        for path in source_files()
        for name in private_overrides(path)
        if (relative(path), name) not in ledgered
    ]

    assert unlisted == []


@pytest.mark.parametrize("row", sorted(ledger()))
def test_each_rows_files_carry_the_comment_naming_it(row: str) -> None:
    comment = f'# Off the framework\'s road: docs/departures.md, "{row}".'

    missing = [path for path in ledger()[row] if comment not in (ROOT / path).read_text()]

    assert missing == []


def test_the_ledger_names_files_that_exist_and_something_in_each() -> None:
    rows = ledger()

    assert len(rows) >= 10
    assert all(places for places in rows.values())
    assert [path for places in rows.values() for path in places if not (ROOT / path).is_file()] == []


def _spells_out_a_name(node: ast.AST) -> bool:
    """A table or column named by hand: ``Model._meta.db_table``, or ``sql.quote("literal")``."""
    if isinstance(node, ast.Attribute) and node.attr == "db_table":
        return True
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "quote"
        and any(isinstance(argument, ast.Constant) for argument in node.args)
    )


def test_every_raw_statement_names_its_tables_and_columns_through_core_sql() -> None:
    # One SQL style (docs/contributing.md, "Raw SQL is written one way"): the names come from the models, so a
    # renamed field or table renames the statement too. Only core/sql.py itself reads _meta.db_table.
    spelled_out = [
        f"{relative(path)}:{node.lineno}"
        for path in source_files()
        if relative(path) != "core/sql.py" and raw_sql_lines(path)
        for node in ast.walk(ast.parse(path.read_text()))
        if _spells_out_a_name(node)
    ]

    assert spelled_out == []
