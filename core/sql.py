"""Written-out SQL for the hottest statements, built from the models so no column is ever forgotten.

The accept path and each delivery run a handful of statements that the ORM cannot express
in one round trip (an UPDATE ... RETURNING, an UPDATE inside a WITH). These helpers give the
pieces of such an INSERT or UPDATE, and read its rows back, with the values prepared and
converted exactly as the ORM would.

This is the one way a raw statement is written here (each stands in a file docs/departures.md names):
- a table is `table(Model)`, a column `column(Model, "field")`, a list of them `columns(Model, alias)`
  (``fields=`` for some of them), never a literal name or ``_meta.db_table``;
- a value goes in prepared by its field: `db_value`, `set_values`, or `insert_values` for a new row;
- a row comes back through `from_row`, the whole model or the ``fields`` the statement selected;
- an ``IN (...)`` list is `in_list`, a multi-row ``VALUES`` is `values_rows`, cut to the database's
  parameter limit by `in_batches`; or, on a hot path, the rows' columns as arrays: `unnest_columns` and
  `unnest_values`;
- the statement's text is built once, as a module constant or under ``functools.cache``, never per call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import Any, TypeAlias, TypeVar

from django.db import DEFAULT_DB_ALIAS, connection, connections, models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models.expressions import Col

ModelT = TypeVar("ModelT", bound=models.Model)
Converter = Callable[[Any, Any, Any], Any]
# Some of a model's fields, by name ("account" or "account_id" alike); None: every concrete field.
FieldNames: TypeAlias = tuple[str, ...] | None
# A column's place in a row, the converters of its fetched value, and the column they are given.
Conversion: TypeAlias = tuple[int, list[Converter], Col]


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


def columns(model: type[models.Model], alias: str = "", *, fields: FieldNames = None) -> str:
    """The columns of ``fields`` (every concrete field by default), quoted, in the model's field order: for an
    INSERT, a RETURNING, or a SELECT that `from_row` reads (``alias``: the table's alias in a join)."""
    prefix = f"{alias}." if alias else ""
    return ", ".join(prefix + quote(field.column) for field in _fields(model, fields))


def column(model: type[models.Model], field_name: str) -> str:
    """The field's column, quoted."""
    return quote(_field(model, field_name).column)


def in_list(count: int) -> str:
    """``%s, %s, ...``: ``count`` placeholders, for an ``IN (...)`` list or one row of values."""
    return ", ".join(["%s"] * count)


def values_rows(count: int, *, width: int) -> str:
    """``(%s, ...), (%s, ...)``: ``count`` rows of ``width`` placeholders, for a multi-row ``VALUES``."""
    return ", ".join([f"({in_list(width)})"] * count)


def in_batches(values: Sequence[Any], *, width: int = 1, other_params: int = 0) -> list[Sequence[Any]]:
    """``values`` cut to fit one statement's parameters, ``width`` for each value, beside ``other_params`` others.

    The limit is SQLite's 999, or the 65,535 PostgreSQL's protocol counts in 16 bits (Django's
    bulk_batch_size leaves a batch whole there, which a large one exceeds).
    """
    limit = ((default_connection().features.max_query_params or 65_535) - other_params) // width
    return [values[start : start + limit] for start in range(0, len(values), limit)]


def placeholders(model: type[models.Model], *, fields: FieldNames = None) -> str:
    """One ``%s`` per column of `columns`."""
    return in_list(len(_fields(model, fields)))


def insert_values(*instances: models.Model, fields: FieldNames = None) -> list[Any]:
    """The values of one or more rows of a model, row after row in `columns` order, as a save() would send them."""
    db = default_connection()
    model_fields = _fields(type(instances[0]), fields)
    return [field.get_db_prep_save(field.pre_save(row, add=True), db) for row in instances for field in model_fields]


@cache
def unnest_columns(model: type[models.Model], *, fields: FieldNames = None) -> str:
    """``unnest(%s::type[], ...)``: one array parameter a column (every concrete field by default), the rows of an
    ``INSERT ... SELECT * FROM`` it whose text and parameters do not grow with the rows. psycopg converts a
    statement's placeholders once and keeps it only for statements of at most 50 parameters
    (psycopg/_queries.py, ``MAX_CACHED_STATEMENT_PARAMS``): ten rows of a wide table in a ``VALUES`` are converted on
    every call; as arrays, once."""
    db = default_connection()
    return "unnest(" + ", ".join(f"%s::{field.db_type(db)}[]" for field in _fields(model, fields)) + ")"


def unnest_values(*instances: models.Model, fields: FieldNames = None) -> list[list[Any]]:
    """The rows' values for `unnest_columns`: column by column, each prepared as `insert_values` prepares it."""
    db = default_connection()
    model_fields = _fields(type(instances[0]), fields)
    return [[field.get_db_prep_save(field.pre_save(row, add=True), db) for row in instances] for field in model_fields]


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


def from_row(model: type[ModelT], row: Sequence[Any], *, fields: FieldNames = None) -> ModelT:
    """The instance a row of `columns(model, fields=fields)` stands for, its values converted as a query's would be;
    with ``fields``, the other fields are deferred, as ``only()`` leaves them."""
    attnames, converting = _reading(model, fields)
    if len(row) != len(attnames):
        raise ValueError(f"{len(row)} values for the {len(attnames)} columns of {model.__name__}: {attnames}")
    values = list(row)
    if converting:  # on PostgreSQL only a field with its own from_db_value has a converter
        db = default_connection()
        for index, converters, col in converting:
            for converter in converters:
                values[index] = converter(values[index], col, db)
    return model.from_db(DEFAULT_DB_ALIAS, attnames, values)


@cache
def _fields(model: type[models.Model], names: FieldNames) -> tuple[models.Field[Any, Any], ...]:
    """The named concrete fields in the model's order, whatever order ``names`` gives: `from_row` relies on it."""
    if names is None:
        return tuple(model._meta.concrete_fields)
    wanted = {_field(model, name) for name in names}
    found = tuple(field for field in model._meta.concrete_fields if field in wanted)
    assert len(found) == len(wanted), f"not concrete fields of {model.__name__}: {names}"
    return found


@cache
def _reading(model: type[models.Model], names: FieldNames) -> tuple[tuple[str, ...], list[Conversion]]:
    """The fields' attnames, and for each column that has any, what the ORM applies to a fetched value: the
    backend's converters, then the field's."""
    fields = _fields(model, names)
    converting: list[Conversion] = []
    for index, field in enumerate(fields):
        col = field.get_col(model._meta.db_table)
        converters = connection.ops.get_db_converters(col) + col.get_db_converters(connection)
        if converters:
            converting.append((index, converters, col))
    return tuple(field.attname for field in fields), converting


def _field(model: type[models.Model], name: str) -> models.Field[Any, Any]:
    field = model._meta.get_field(name)
    assert isinstance(field, models.Field)
    return field
