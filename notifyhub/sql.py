"""Written-out SQL for the hottest statements, built from the models so no column is ever forgotten.

The accept path and each delivery run a handful of statements; compiling them through the
ORM cost more than running them (bench/README.md). These helpers give the pieces of an
INSERT or UPDATE with the values prepared exactly as the ORM would prepare them.
"""

from __future__ import annotations

from typing import Any

from django.db import connection, models


def quote(name: str) -> str:
    return connection.ops.quote_name(name)


def table(model: type[models.Model]) -> str:
    return quote(model._meta.db_table)


def columns(model: type[models.Model]) -> str:
    """Every concrete field's column, quoted, in field order: for an INSERT or a RETURNING."""
    return ", ".join(quote(field.column) for field in model._meta.concrete_fields)


def placeholders(model: type[models.Model]) -> str:
    """One ``%s`` per column of `columns`."""
    return ", ".join(["%s"] * len(model._meta.concrete_fields))


def insert_values(instance: models.Model) -> list[Any]:
    """The instance's values in `columns` order, as a save() would send them."""
    return [
        field.get_db_prep_save(field.pre_save(instance, add=True), connection)
        for field in instance._meta.concrete_fields
    ]


def db_value(model: type[models.Model], field_name: str, value: Any) -> Any:
    """``value`` prepared for the database as the model's field prepares it."""
    return _field(model, field_name).get_db_prep_value(value, connection)


def set_clause(model: type[models.Model], changes: dict[str, Any]) -> tuple[str, list[Any]]:
    """``col = %s, ...`` for the named fields, and their prepared values."""
    clause = ", ".join(f"{quote(_field(model, name).column)} = %s" for name in changes)
    return clause, [db_value(model, name, value) for name, value in changes.items()]


def _field(model: type[models.Model], name: str) -> models.Field[Any, Any]:
    field = model._meta.get_field(name)
    assert isinstance(field, models.Field)
    return field
