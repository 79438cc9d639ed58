"""The base of every request-validating serializer."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any, ClassVar, Self, TypeVar

from rest_framework import serializers
from rest_framework.request import Request

from core.api.exceptions import UnknownField

FieldT = TypeVar("FieldT", bound=serializers.Field)


# A serializer that checks a request's body or query string, cheaply enough for the send path.
#
# DRF gives each serializer instance deep copies of the declared fields, a cost every send
# pays (docs/departures.md). A serializer needs
# fields of its own only because binding sets their name and parent; nothing else in a
# field changes after construction, so a shallow clone serves.
# (A comment, not a docstring: drf-spectacular would show a docstring to API clients.)
class RequestSerializer(serializers.Serializer):
    # JSON Schema keywords for what ``validate`` refuses across fields, added to the body's schema in the
    # OpenAPI document (core.api.schema), so that the document allows no body the API refuses.
    body_rules: ClassVar[dict[str, Any]] = {}

    # Off the framework's road: docs/departures.md, "cloned-fields".
    def get_fields(self) -> dict[str, serializers.Field]:
        return {name: _clone(field) for name, field in self._declared_fields.items()}

    @classmethod
    def of(cls, request: Request) -> Self:
        """The request's query string, validated: a field it refuses is the 400 that field gives."""
        query = cls(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        return query


# A serializer of a JSON request body, which refuses a field it does not know (docs/rules.md, "Order of checks on a
# send"): first, before any field is checked, as Stripe refuses an unknown parameter, so that a client learns at once
# that the field it counts on is not one the API takes. Query strings keep RequestSerializer: the rule is a body's.
class BodySerializer(RequestSerializer):
    def to_internal_value(self, data: Any) -> Any:
        # Anything but an object is the framework's to refuse, as for any serializer.
        if isinstance(data, Mapping):
            refuse_unknown_fields(data, known_fields(type(self)))
        return super().to_internal_value(data)


@cache
def known_fields(kind: type[BodySerializer]) -> frozenset[str]:
    """The names a body of ``kind`` may hold, once per class: its fields as ``get_fields`` gives them (where a
    subclass may add one, as the email send's ``from``)."""
    return frozenset(kind().get_fields())


def refuse_unknown_fields(body: Mapping[str, Any], known: frozenset[str]) -> None:
    """Raises ``unknown_field`` naming the first field of ``body``, in its order, that is not in ``known``."""
    if known.issuperset(body):
        return
    name = next(name for name in body if name not in known)
    raise serializers.ValidationError({name: [UnknownField.reason_for(name)]}, code=UnknownField.code)


def _clone(field: FieldT) -> FieldT:
    # What copy.copy does for a plain object, without its generic reduce protocol.
    clone = object.__new__(type(field))
    clone.__dict__.update(field.__dict__)
    return clone
