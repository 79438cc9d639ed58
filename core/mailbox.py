"""An email address with an optional display name, ``Acme Billing <billing@acme.com>`` (docs/rules.md, "Rich email").

One grammar, narrower than RFC 5322's, that the send's checks, the OpenAPI document and every email parser read
alike: a name is either a phrase without RFC 5322's specials (a ``.`` aside, as in ``J. Smith``) or a quoted string
without ``"`` or ``\\``; never a comment, an encoded word's line break, a group or a second address. A name a parser
could split (``Acme, Inc <a@acme.com>``) must be quoted (``"Acme, Inc" <a@acme.com>``), so what the holder sends is
the one address the providers get.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DISPLAY_NAME_MAX_LENGTH = 200
# What no display name holds: control characters and the line breaks of Unicode, so a name is one line.
_NEVER_IN_NAME = r"\x00-\x1f\x7f\x85\u2028\u2029"
# A phrase's characters: no RFC 5322 special but the dot, and no quote.
_PHRASE_CHAR = rf'[^{_NEVER_IN_NAME}()<>\[\]:;@\\,"]'
_PHRASE_EDGE = rf'[^{_NEVER_IN_NAME}()<>\[\]:;@\\," ]'
_QUOTED_CHAR = rf'[^{_NEVER_IN_NAME}"\\]'
# 1 to 200 characters, starting and ending with one that is not a space; or 1 to 200 of them in quotes.
DISPLAY_NAME_PATTERN = (
    f"({_PHRASE_EDGE}({_PHRASE_CHAR}{{0,{DISPLAY_NAME_MAX_LENGTH - 2}}}{_PHRASE_EDGE})?"
    f'|"{_QUOTED_CHAR}{{1,{DISPLAY_NAME_MAX_LENGTH}}}")'
)
# The address inside the brackets: a dot-atom local part at a DNS name of letter-only top-level label, as a bare
# address's would be in the main. (A bare address may also have a quoted local part or an internationalised domain;
# in brackets, not.) Its length is bounded by the whole named address's (NAMED_ADDRESS_MAX_LENGTH) alone: the
# document's generators cannot follow a lookahead, which counting it apart would take.
_ATOM = r"[-!#$%&'*+/=?^_`{}|~0-9A-Za-z]+"
_LABEL = "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
BRACKETED_ADDRESS_PATTERN = rf"<{_ATOM}(\.{_ATOM})*@({_LABEL}\.)+([A-Za-z]{{2,63}}|[Xx][Nn]--[A-Za-z0-9]{{1,59}})>"
NAMED_ADDRESS_PATTERN = f"{DISPLAY_NAME_PATTERN} ?{BRACKETED_ADDRESS_PATTERN}"
# The longest named address: a quoted name of 200, a space, and a bracketed address of 254.
NAMED_ADDRESS_MAX_LENGTH = DISPLAY_NAME_MAX_LENGTH + 2 + 1 + 254 + 2

_NAMED_ADDRESS = re.compile(NAMED_ADDRESS_PATTERN)
_BRACKETED_ADDRESS = re.compile(BRACKETED_ADDRESS_PATTERN)


@dataclass(frozen=True)
class Mailbox:
    """An address and the display name before it, as sent (quotes included), or None for a bare address."""

    name: str | None
    address: str

    def at(self, address: str) -> str:
        """This mailbox with another address, its name kept as sent."""
        return address if self.name is None else f"{self.name} <{address}>"


def mailbox_parse(value: str) -> Mailbox:
    """The parts of a mailbox the send's checks took (core.api.fields.MailboxField): a bare address, or a name and an
    address in brackets."""
    if not value.endswith(">"):
        return Mailbox(None, value)
    name, _, bracketed = value[:-1].rpartition("<")
    return Mailbox(name.rstrip(" "), bracketed)


def is_named_address(value: str) -> bool:
    """Whether ``value`` is a display name and an address in brackets, as this module's grammar has them."""
    return len(value) <= NAMED_ADDRESS_MAX_LENGTH and _NAMED_ADDRESS.fullmatch(value) is not None


def is_bracketed_address(address: str) -> bool:
    """Whether ``address`` is one this module's grammar takes in brackets."""
    return _BRACKETED_ADDRESS.fullmatch(f"<{address}>") is not None


def display_name_text(name: str) -> str:
    """The name a display name shows: a quoted one without its quotes."""
    return name[1:-1] if name.startswith('"') and name.endswith('"') else name
