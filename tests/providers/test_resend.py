from __future__ import annotations

import pytest

from providers.resend import record_host


@pytest.mark.parametrize(
    ("record_name", "domain", "host"),
    [
        ("send.em", "em.example.com", "send.em.example.com"),
        ("resend._domainkey.em", "em.example.com", "resend._domainkey.em.example.com"),
        ("send.em.mail", "em.mail.example.co.uk", "send.em.mail.example.co.uk"),
        ("send.em.example.com", "em.example.com", "send.em.example.com"),
        ("@", "em.example.com", "em.example.com"),
    ],
)
def test_resend_record_names_becomerecord_hosts(record_name: str, domain: str, host: str) -> None:
    assert record_host(record_name, domain) == host
