"""The dashboard's own emails (confirmation links, password resets), sent through the platform."""

from __future__ import annotations

import logging

from core.errors import UpstreamFailed
from notifications.services import platform_email_send

logger = logging.getLogger(__name__)


def send_platform_email(*, to: str, subject: str, html: str) -> bool:
    """Sends now; False when no provider took it, which the page then says (the holder can ask again)."""
    try:
        platform_email_send(to=to, subject=subject, html=html)
    except UpstreamFailed as error:
        logger.warning("Platform email %r to %s not sent: %s", subject, to, error.message)
        return False
    return True
