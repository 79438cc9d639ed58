from __future__ import annotations

import json
from typing import Any

from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models.expressions import Expression


class JSONTextField(models.TextField):
    """JSON kept as text, so objects keep the key order the client sent.

    PostgreSQL's jsonb sorts keys; a webhook must go out with the payload as submitted.
    """

    # django-stubs: the Python type a model attribute of this field takes and gives.
    _pyi_private_set_type: Any
    _pyi_private_get_type: Any

    def from_db_value(self, value: str | None, expression: Expression, connection: BaseDatabaseWrapper) -> Any:
        return None if value is None else json.loads(value)

    def to_python(self, value: Any) -> Any:
        return json.loads(value) if isinstance(value, str) else value

    def get_prep_value(self, value: Any) -> str | None:
        return None if value is None else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
