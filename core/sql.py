"""Written-out SQL for the hottest statements, built from the models so no column is ever forgotten.

The accept path and each delivery run a handful of statements that the ORM cannot express
in one round trip (an UPDATE ... RETURNING, an UPDATE inside a WITH). These helpers give the
pieces of such an INSERT or UPDATE, and read its rows back, with the values prepared and
converted exactly as the ORM would.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, connection, connections, models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models.expressions import Col

ModelT = TypeVar("ModelT", bound=models.Model)
Converter = Callable[[Any, Any, Any], Any]


def default_connection() -> BaseDatabaseWrapper:
    """The default connection itself, not ``connection``, the proxy that looks it up on every read.

    Preparing a row's values reads the connection a few times per field, and each read through
    the proxy is a thread-local lookup.
    """
    return connections[DEFAULT_DB_ALIAS]


def quote(name: str) -> str:
    return connection.ops.quote_name(name)


def table(model: type[models.Model]) -> str:
    return quote(model._meta.db_table)


def columns(model: type[models.Model], alias: str = "") -> str:
    """Every concrete field's column, quoted, in field order: for an INSERT, a RETURNING, or a
    SELECT that `from_row` reads (``alias``: the table's alias in a join)."""
    prefix = f"{alias}." if alias else ""
    return ", ".join(prefix + quote(field.column) for field in model._meta.concrete_fields)


def column(model: type[models.Model], field_name: str) -> str:
    """The field's column, quoted."""
    return quote(_field(model, field_name).column)


def in_batches(values: Sequence[Any], *, other_params: int = 0) -> list[Sequence[Any]]:
    """``values`` cut to fit one statement's parameters beside ``other_params`` others (SQLite's limit)."""
    limit = (default_connection().features.max_query_params or 65_535) - other_params
    return [values[start : start + limit] for start in range(0, len(values), limit)]


def placeholders(model: type[models.Model]) -> str:
    """One ``%s`` per column of `columns`."""
    return ", ".join(["%s"] * len(model._meta.concrete_fields))


def insert_values(instance: models.Model) -> list[Any]:
    """The instance's values in `columns` order, as a save() would send them."""
    db = default_connection()
    return [field.get_db_prep_save(field.pre_save(instance, add=True), db) for field in instance._meta.concrete_fields]


def db_value(model: type[models.Model], field_name: str, value: Any) -> Any:
    """``value`` prepared for the database as the model's field prepares it."""
    return _field(model, field_name).get_db_prep_value(value, default_connection())


@cache
def set_clause(model: type[models.Model], field_names: tuple[str, ...]) -> str:
    """``col = %s, ...`` for the named fields; `set_values` gives the values in the same order."""
    return ", ".join(f"{column(model, name)} = %s" for name in field_names)


def set_values(model: type[models.Model], changes: dict[str, Any]) -> list[Any]:
    db = default_connection()
    return [_field(model, name).get_db_prep_value(value, db) for name, value in changes.items()]


def from_row(model: type[ModelT], row: Sequence[Any]) -> ModelT:
    """The instance a row of `columns(model)` stands for, its values converted as a query's would be."""
    db = default_connection()
    values = [
        _convert(value, converters, column, db)
        for value, (converters, column) in zip(row, _converters(model), strict=True)
    ]
    return model.from_db(db.alias, _attnames(model), values)


@cache
def _attnames(model: type[models.Model]) -> tuple[str, ...]:
    return tuple(field.attname for field in model._meta.concrete_fields)


def _convert(value: Any, converters: list[Converter], column: Col, db: BaseDatabaseWrapper) -> Any:
    for converter in converters:
        value = converter(value, column, db)
    return value


@cache
def _converters(model: type[models.Model]) -> list[tuple[list[Converter], Col]]:
    """Per column, what the ORM applies to a fetched value: the backend's converters, then the field's."""
    cols = [field.get_col(model._meta.db_table) for field in model._meta.concrete_fields]
    return [(connection.ops.get_db_converters(col) + col.get_db_converters(connection), col) for col in cols]


def _field(model: type[models.Model], name: str) -> models.Field[Any, Any]:
    field = model._meta.get_field(name)
    assert isinstance(field, models.Field)
    return field
