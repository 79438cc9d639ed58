"""The base of every request-validating serializer."""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

from rest_framework import serializers

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


def _clone(field: FieldT) -> FieldT:
    # What copy.copy does for a plain object, without its generic reduce protocol.
    clone = object.__new__(type(field))
    clone.__dict__.update(field.__dict__)
    return clone
