"""The API's JSON into the dataclasses of ``_models.py``, by their type hints: ``createdAt`` into ``created_at``, a
datetime; a nested object into its dataclass; a list into a tuple."""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping
from datetime import date, datetime
from functools import cache
from typing import Any, ClassVar, Protocol, TypeVar, Union, get_args, get_origin, get_type_hints


class DataclassInstance(Protocol):
    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]


D = TypeVar("D", bound=DataclassInstance)


def api_name(field_name: str) -> str:
    """The API's name of a field: ``job_id`` is ``jobId``."""
    first, *rest = field_name.split("_")
    return first + "".join(word.title() for word in rest)


def decode(cls: type[D], data: Mapping[str, Any]) -> D:
    """``data``'s fields that ``cls`` knows, each read by its type; one the answer lacks keeps its default."""
    hints = _hints(cls)
    values = {
        field.name: _value(hints[field.name], data[api_name(field.name)])
        for field in dataclasses.fields(cls)
        if api_name(field.name) in data
    }
    return cls(**values)


@cache
def _hints(cls: type[DataclassInstance]) -> dict[str, Any]:
    return get_type_hints(cls)


def _value(hint: Any, value: Any) -> Any:
    origin = get_origin(hint)
    if value is None:
        return None
    if origin in (Union, types.UnionType):
        (present,) = (arg for arg in get_args(hint) if arg is not type(None))
        return _value(present, value)
    if origin is tuple:
        return tuple(_value(get_args(hint)[0], item) for item in value)
    if hint is datetime:
        return datetime.fromisoformat(value)
    if hint is date:
        return date.fromisoformat(value)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return decode(hint, value)
    return value
