"""A file for an email, as the send's ``attachments`` carries it (NotifyHub's docs/rules.md, "Attachments"):
its name, its bytes in standard base64, and optionally its type and the Content-ID that makes it inline."""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, kw_only=True)
class Attachment:
    """``content_type`` left out: NotifyHub takes it from the filename. ``content_id``: shown inline where ``body``
    says ``cid:<content_id>``."""

    filename: str
    content: bytes
    content_type: str | None = None
    content_id: str | None = None

    @classmethod
    def from_path(
        cls,
        path: str | os.PathLike[str],
        *,
        filename: str | None = None,
        content_type: str | None = None,
        content_id: str | None = None,
    ) -> Attachment:
        """The file at ``path``, read now, named by its own name unless ``filename`` says otherwise."""
        file = Path(path)
        return cls(
            filename=filename or file.name,
            content=file.read_bytes(),
            content_type=content_type,
            content_id=content_id,
        )

    def as_body(self) -> dict[str, str]:
        """The attachment in the API's names."""
        body = {"filename": self.filename, "content": base64.b64encode(self.content).decode("ascii")}
        if self.content_type is not None:
            body["contentType"] = self.content_type
        if self.content_id is not None:
            body["contentId"] = self.content_id
        return body
