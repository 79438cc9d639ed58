"""The base of every request-validating serializer."""

from __future__ import annotations

from rest_framework import serializers


class RequestSerializer(serializers.Serializer):
    """A serializer that checks a request's body or query string, cheaply enough for the send path.

    DRF gives each serializer instance deep copies of the declared fields, and deep-copying
    them was over half of what validating a send cost (bench/README.md). A field's deep copy
    is a new instance built from the field's constructor arguments after copying those; the
    arguments are never changed, so this builds the new instances from them directly.
    """

    def get_fields(self) -> dict[str, serializers.Field]:
        return {
            name: type(field)(*field._args, **field._kwargs)  # type: ignore[attr-defined]
            for name, field in self._declared_fields.items()
        }
