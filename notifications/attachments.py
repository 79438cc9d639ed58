"""An email's attachments (docs/rules.md, "Attachments"): the request field that checks them, the rows and payload
entries a new job keeps of them, and the reads of their content, which only the delivery and the holder's download
make.

The content lives in notifications.Attachment, never in the job's payload: a claim, a list or a status read loads
the job row alone, whatever its files weigh.
"""

from __future__ import annotations

import binascii
import hashlib
import mimetypes
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

from drf_spectacular.utils import extend_schema_field

from core.api.fields import StrictField, in_either_case, whole_value
from notifications.models import Attachment, Job
from notifications.selectors import attachment_content
from providers.base import EmailAttachment

MAX_ATTACHMENTS = 10
# Decoded, all of a message's files together: Postmark's limit for a whole message, the smallest of the three.
MAX_TOTAL_BYTES = 10 * 1024 * 1024
FILENAME_MAX_LENGTH = 255
CONTENT_ID_MAX_LENGTH = 255
MEDIA_TYPE_MAX_LENGTH = 255
# Types a mail client may run when opened; mail providers refuse most of them, and no transactional mail needs one.
EXECUTABLE_EXTENSIONS = frozenset(
    {"exe", "bat", "cmd", "com", "cpl", "scr", "pif", "msi", "msp", "mst", "vbs", "vbe", "js", "jse", "jar", "wsf"}
    | {"wsh", "hta", "lnk", "reg", "chm", "hlp", "inf", "ins", "isp", "sct", "shs", "msc"}
)
KNOWN_KEYS = ("filename", "content", "contentType", "contentId")
# RFC 6838's restricted-name, for a type and its subtype (section 4.2); no parameters.
_RESTRICTED_NAME = r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}"
MEDIA_TYPE = re.compile(f"{_RESTRICTED_NAME}/{_RESTRICTED_NAME}")
# Printable ASCII but the angle brackets that enclose a Content-ID and the space: RFC 2392's cid URL takes it as is.
CONTENT_ID = re.compile(r"[!-;=?-~]+")
# Windows drops a name's trailing dots and spaces: "invoice.exe. " opens as invoice.exe.
_TRAILING = ". "
# Standard base64 with its padding (RFC 4648, section 4): what base64_decoded takes.
BASE64_PATTERN = "([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?"
_CONTROL_CLASS = r"\x00-\x1f\x7f-\x9f"
_EXECUTABLE = "|".join(in_either_case(extension) for extension in sorted(EXECUTABLE_EXTENSIONS))
FILENAME_PATTERN = whole_value(rf"(?![^{_CONTROL_CLASS}/\\]*\.({_EXECUTABLE})[. ]*$)(?![. ]*$)[^{_CONTROL_CLASS}/\\]+")

ATTACHMENTS_SCHEMA: dict[str, Any] = {
    "type": "array",
    "maxItems": MAX_ATTACHMENTS,
    "description": (
        f"At most {MAX_ATTACHMENTS} files, at most 10 MiB decoded in all. An attachment with `contentId` is inline: "
        "the body shows it as `cid:<contentId>`. Get job status shows each without its content, with its `size` "
        "and `sha256`."
    ),
    "items": {
        "type": "object",
        "additionalProperties": False,
        "required": ["filename", "content"],
        "properties": {
            "filename": {
                "type": "string",
                "minLength": 1,
                "maxLength": FILENAME_MAX_LENGTH,
                "pattern": FILENAME_PATTERN,
                "description": "Without `/`, `\\` or control characters, and not an executable type "
                f"({', '.join(sorted(EXECUTABLE_EXTENSIONS))}).",
            },
            "content": {
                "type": "string",
                "format": "byte",
                "minLength": 4,
                "pattern": whole_value(BASE64_PATTERN),
                "description": "The file, in standard base64 with its padding.",
            },
            "contentType": {
                "type": "string",
                "maxLength": MEDIA_TYPE_MAX_LENGTH,
                "pattern": whole_value(MEDIA_TYPE.pattern),
                "description": "`type/subtype`; omitted, the filename's type, else `application/octet-stream`.",
            },
            "contentId": {
                "type": "string",
                "minLength": 1,
                "maxLength": CONTENT_ID_MAX_LENGTH,
                "pattern": whole_value(CONTENT_ID.pattern),
            },
        },
    },
}


@extend_schema_field(ATTACHMENTS_SCHEMA)
class AttachmentsField(StrictField):
    """A list of attachments, each checked in turn and named by its place (``attachments[2].content ...``);
    their total is measured from the base64's length before any is decoded."""

    invalid_message = f"{{name}} must be a list of at most {MAX_ATTACHMENTS} attachments"

    def __init__(self) -> None:
        super().__init__(required=False)

    def to_internal_value(self, data: Any) -> tuple[EmailAttachment, ...]:
        if not isinstance(data, list) or len(data) > MAX_ATTACHMENTS:
            self.fail("invalid")
        for index, item in enumerate(data):
            self._check_shape(index, item)
        if sum(_decoded_length(item["content"]) for item in data) > MAX_TOTAL_BYTES:
            self.reject("{name} may total at most 10 MB")
        return tuple(self._attachment(index, item) for index, item in enumerate(data))

    def _check_shape(self, index: int, item: Any) -> None:
        if not isinstance(item, dict):
            self.reject("{name}[{index}] must be an object", index=index)
        for key in item:
            if key not in KNOWN_KEYS:
                self.reject("{name}[{index}] has an unknown field: {key}", index=index, key=key)
        if "filename" not in item:
            self.reject("{name}[{index}].filename is required", index=index)
        self._check_filename(index, item["filename"])
        content = item.get("content")
        if not isinstance(content, str) or not content:
            self.reject("{name}[{index}].content must be base64", index=index)

    def _check_filename(self, index: int, filename: Any) -> None:
        if not isinstance(filename, str) or not 1 <= len(filename) <= FILENAME_MAX_LENGTH:
            self.reject(f"{{name}}[{{index}}].filename must be 1 to {FILENAME_MAX_LENGTH} characters", index=index)
        if any(char in "/\\" or unicodedata.category(char) == "Cc" for char in filename) or not filename.strip(
            _TRAILING
        ):
            self.reject(
                "{name}[{index}].filename must be a file name, without /, \\ or control characters", index=index
            )
        if _extension(filename) in EXECUTABLE_EXTENSIONS:
            self.reject("{name}[{index}].filename may not be an executable file", index=index)

    def _attachment(self, index: int, item: dict[str, Any]) -> EmailAttachment:
        filename: str = item["filename"]
        content = base64_decoded(item["content"])
        if content is None:
            self.reject("{name}[{index}].content must be base64", index=index)
        return EmailAttachment(
            filename=filename,
            content=content,
            content_type=self._content_type(index, item, filename),
            content_id=self._content_id(index, item),
        )

    def _content_type(self, index: int, item: dict[str, Any], filename: str) -> str:
        if "contentType" not in item:
            return mimetypes.guess_type(filename, strict=False)[0] or "application/octet-stream"
        given = item["contentType"]
        if not isinstance(given, str) or len(given) > MEDIA_TYPE_MAX_LENGTH or not MEDIA_TYPE.fullmatch(given):
            self.reject("{name}[{index}].contentType must be a media type such as application/pdf", index=index)
        return given

    def _content_id(self, index: int, item: dict[str, Any]) -> str | None:
        if "contentId" not in item:
            return None
        given = item["contentId"]
        if not isinstance(given, str) or len(given) > CONTENT_ID_MAX_LENGTH or not CONTENT_ID.fullmatch(given):
            self.reject(
                f"{{name}}[{{index}}].contentId must be 1 to {CONTENT_ID_MAX_LENGTH} printable ASCII characters "
                "without <, > or spaces",
                index=index,
            )
        return given


def base64_decoded(text: str) -> bytes | None:
    """``text``'s bytes if it is what BASE64_PATTERN matches, else None.

    binascii reads an ASCII str in place, where base64.b64decode would copy it to bytes first (13 MB for a 10 MB
    file). Its strict mode refuses what is not the alphabet, padding inside the text and a missing pad, but takes
    extra pads after a whole quantum (``QUJD==``), which the length and the count of pads refuse.
    """
    if len(text) % 4 or text.endswith("==="):
        return None
    try:
        return binascii.a2b_base64(text, strict_mode=True)
    except ValueError:  # binascii.Error, or a character beyond ASCII
        return None


def _extension(filename: str) -> str:
    """The extension the file opens by, in lower case: after the last dot, once trailing dots and spaces are gone."""
    _, dot, extension = filename.rstrip(_TRAILING).rpartition(".")
    return extension.lower() if dot else ""


def _decoded_length(content: str) -> int:
    """How many bytes ``content`` decodes to, if it is base64, from its length alone."""
    return len(content) * 3 // 4 - content[-2:].count("=")


def payload_entries(attachments: Sequence[EmailAttachment]) -> list[dict[str, Any]]:
    """What the job's payload keeps of each attachment: everything but the content, with its size and digest."""
    entries = []
    for attachment in attachments:
        entry: dict[str, Any] = {"filename": attachment.filename, "contentType": attachment.content_type}
        if attachment.content_id is not None:
            entry["contentId"] = attachment.content_id
        entry.update(size=len(attachment.content), sha256=hashlib.sha256(attachment.content).hexdigest())
        entries.append(entry)
    return entries


def attachment_rows(job: Job, attachments: Sequence[EmailAttachment]) -> tuple[Attachment, ...]:
    """The rows that keep ``job``'s attachments, in order, their metadata as the payload's entries give it."""
    return tuple(
        Attachment(
            job=job,
            position=position,
            filename=attachment.filename,
            content_type=attachment.content_type,
            content_id=attachment.content_id,
            size=entry["size"],
            sha256=entry["sha256"],
            content=attachment.content,
        )
        for position, (attachment, entry) in enumerate(zip(attachments, job.payload["attachments"], strict=True))
    )


def job_attachments(job: Job) -> tuple[EmailAttachment, ...]:
    """The attachments a delivery sends, in order, each read in slices (attachment_content): the worker's
    connection never buffers more than a slice. None without the payload's say-so."""
    if not job.payload.get("attachments"):
        return ()
    files = Attachment.objects.filter(job_id=job.id).order_by("position")
    return tuple(
        EmailAttachment(
            filename=filename,
            content=b"".join(attachment_content(job_id=job.id, position=position, size=size)),
            content_type=content_type,
            content_id=content_id,
        )
        for position, filename, content_type, content_id, size in files.values_list(
            "position", "filename", "content_type", "content_id", "size"
        )
    )
