"""Reading a dashboard page in a test: its HTML with the whitespace folded, or the text a reader sees."""

from __future__ import annotations

import html
import re
from typing import Any


def page_html(response: Any) -> str:
    return re.sub(r"\s+", " ", response.content.decode())


def page_text(response: Any) -> str:
    """What a reader sees: the page without its tags, a sentence's full stop back against its last word."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", response.content.decode()))).replace(" .", ".")
