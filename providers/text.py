"""The plain-text part of an email, derived from its HTML body with inscriptis.

Line breaks survive (paragraphs, ``<br>``, list items), and a link keeps where it goes as
``text (url)``, so a reader of the text part can still follow it. inscriptis's own link option
writes ``[text](url)``; its documented tag handlers give this form instead
(https://github.com/weblyzard/inscriptis#custom-html-tag-handling).
"""

from __future__ import annotations

import re

from inscriptis import get_text
from inscriptis.css_profiles import CSS_PROFILES
from inscriptis.model.config import ParserConfig
from inscriptis.model.html_document_state import HtmlDocumentState
from inscriptis.model.tag import CustomHtmlTagHandlerMapping

# A link whose text is its own address, written once: ``url (url)`` becomes ``url``. Only a word that begins with a
# URL scheme matches, and the lookbehind lets a match start only where a word starts, so a long run without spaces
# is scanned once, not once per character.
_REPEATED_LINK = re.compile(r"(?<!\S)([A-Za-z][A-Za-z0-9+.-]*:\S+) \(\1\)")


def _link_start(state: HtmlDocumentState, attrs: dict[str, str]) -> None:
    href = attrs.get("href", "").strip()
    # A link within the page (#section) leads nowhere from a text part.
    state.link_target = "" if href.startswith("#") else href


def _link_end(state: HtmlDocumentState) -> None:
    if state.link_target:
        state.tags[-1].write(f" ({state.link_target})")


# The strict profile renders as a browser does (Firefox's defaults); the relaxed one indents every <div>, which
# email layouts nest deeply.
_CONFIG = ParserConfig(
    css=CSS_PROFILES["strict"],
    custom_html_tag_handler_mapping=CustomHtmlTagHandlerMapping(
        start_tag_mapping={"a": _link_start}, end_tag_mapping={"a": _link_end}
    ),
)


def text_part(html: str) -> str:
    # inscriptis ends a closing block with a line break; the part ends with its last word.
    return _REPEATED_LINK.sub(r"\1", get_text(html, _CONFIG)).rstrip()
