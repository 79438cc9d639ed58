from __future__ import annotations

# The provider-event fixtures: the tests here post events as the providers do.
from tests.webhooks_inbound.conftest import holder, postmark_events, resend_events, sendgrid_events, sent_email

__all__ = ["holder", "postmark_events", "resend_events", "sendgrid_events", "sent_email"]
