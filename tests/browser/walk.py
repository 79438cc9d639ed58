"""The steps a holder takes in the dashboard, each through the page's labels and buttons as a person would.

Each step starts from any page, goes where it needs to, and checks it arrived. The walk in
test_sign_up_walk.py chains them; a new page adds its steps here (next: add a provider key, then request and
verify a domain against the fake providers of tests/providers_fixtures.py, whose ``settings`` overrides the
live server sees, as it runs in the test's process).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import requests
from django.core import mail
from playwright.sync_api import Locator, Page, expect

from notifications.services import REQUEUED_MESSAGE

CONFIRMATION_LINK = re.compile(r"https?://\S+/signup/confirm/\S+/\S+/")


@dataclass
class Holder:
    """Who walks: the address and password they sign up with, and the API key once they made one."""

    email: str
    password: str
    api_key: str | None = None


def sign_up(page: Page, holder: Holder) -> None:
    fill_sign_up(page, email=holder.email, password=holder.password)
    expect(page.get_by_role("heading", name="Check your email")).to_be_visible()
    expect(page.get_by_text(holder.email)).to_be_visible()


def fill_sign_up(page: Page, *, email: str, password: str) -> None:
    page.goto("/signup/")
    page.get_by_label("Email", exact=True).fill(email)
    page.get_by_label("Password", exact=True).fill(password)
    page.get_by_role("button", name="Sign up").click()


def confirmation_link(email: str) -> str:
    """The link in the one confirmation email sent to ``email`` (Django's locmem outbox)."""
    sent = [message for message in mail.outbox if message.to == [email]]
    assert len(sent) == 1, f"expected one email to {email}, outbox has {[m.to for m in mail.outbox]}"
    assert sent[0].subject == "Confirm your NotifyHub email address"
    found = CONFIRMATION_LINK.search(str(sent[0].body))
    assert found, f"no confirmation link in:\n{sent[0].body}"
    return found.group(0)


def confirm_email(page: Page, holder: Holder) -> None:
    """Follows the emailed link and confirms with the password; that signs the holder in, on the dashboard."""
    page.goto(confirmation_link(holder.email))
    expect(page.get_by_text(f"Confirm {holder.email} with the password you signed up with.")).to_be_visible()
    page.get_by_label("Password", exact=True).fill(holder.password)
    page.get_by_role("button", name="Confirm email address").click()
    expect_signed_in_on_dashboard(page)
    expect(page.get_by_role("status")).to_contain_text("Your email address is confirmed")


def expect_signed_in_on_dashboard(page: Page) -> None:
    expect(page).to_have_url(re.compile(r"/dashboard/$"))
    expect(page.get_by_role("heading", name="Dashboard", exact=True)).to_be_visible()
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()


def sign_out(page: Page) -> None:
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("navigation", name="Main").get_by_role("link", name="Sign in")).to_be_visible()
    expect(page.get_by_role("button", name="Sign out")).to_have_count(0)


def fill_sign_in(page: Page, *, email: str, password: str) -> None:
    page.goto("/login/")
    page.get_by_label("Email", exact=True).fill(email)
    page.get_by_label("Password", exact=True).fill(password)
    page.get_by_role("button", name="Sign in").click()


def sign_in(page: Page, holder: Holder) -> None:
    fill_sign_in(page, email=holder.email, password=holder.password)
    expect_signed_in_on_dashboard(page)


def generate_api_key(page: Page, holder: Holder) -> str:
    """Makes the holder's first key and reads it from the page, the one time it is shown."""
    page.goto("/dashboard/api-key/")
    page.get_by_role("button", name="Generate API key").click()
    key = page.locator("code#new-api-key").inner_text().strip()
    assert key.startswith("nh_"), key
    holder.api_key = key
    return key


def ping(base_url: str, api_key: str) -> requests.Response:
    return requests.get(f"{base_url}/api/v1/ping", headers={"X-API-Key": api_key}, timeout=10)


def expect_field_error(page: Page, label: str, message: str) -> None:
    """The error sits in the labelled field's own block, announced (role=alert)."""
    field = page.locator(".field").filter(has=page.get_by_label(label, exact=True))
    expect(field.get_by_role("alert")).to_contain_text(message)


def add_provider_key(page: Page, *, provider_label: str, api_key: str) -> None:
    """Adds a key on the providers page; the page checks it with the provider before saving it."""
    page.goto("/dashboard/providers/")
    page.get_by_label("Provider", exact=True).select_option(label=provider_label)
    page.get_by_label("API key", exact=True).fill(api_key)
    page.get_by_role("button", name="Check and save key").click()
    expect(page.get_by_role("status").first).to_contain_text(provider_label)
    expect(page.get_by_role("button", name=f"Remove the {provider_label} key")).to_be_visible()


def request_domain(page: Page, name: str) -> None:
    page.goto("/dashboard/domain/")
    page.get_by_label("Domain", exact=True).fill(name)
    page.get_by_role("button", name="Request domain").click()
    expect(page.get_by_role("heading", level=2).filter(has_text=name)).to_be_visible()
    expect(page.get_by_text("pending verification").first).to_be_visible()


def verify_domain(page: Page) -> None:
    page.goto("/dashboard/domain/")
    page.get_by_role("button", name="Verify").click()


def filter_jobs(page: Page, *, type: str, status: str, tag: str = "") -> None:
    """Chooses the jobs page's filters by their option labels ("All types", "Email", "Failed"...), types ``tag``
    if given, and filters."""
    page.goto("/dashboard/jobs/")
    page.get_by_label("Type", exact=True).select_option(label=type)
    page.get_by_label("Status", exact=True).select_option(label=status)
    if tag:
        page.get_by_label("Tag", exact=True).fill(tag)
    page.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(re.compile(r"/dashboard/jobs/\?"))


def expect_filters(page: Page, *, type: str, status: str) -> None:
    """The selects show these values ("" for all)."""
    expect(page.get_by_label("Type", exact=True)).to_have_value(type)
    expect(page.get_by_label("Status", exact=True)).to_have_value(status)


def listed_jobs(page: Page) -> Locator:
    """The job ids of the page's jobs table, in its order: each is the link to the job's page."""
    return page.get_by_role("table").get_by_role("link")


def open_job(page: Page, job_id: str, *, listed_on: str = "/dashboard/jobs/") -> None:
    """Clicks the job in the list of ``listed_on``, to the job's page."""
    page.goto(listed_on)
    page.get_by_role("link", name=job_id, exact=True).click()
    expect(page).to_have_url(re.compile(rf"/dashboard/jobs/{job_id}/$"))
    expect(job_field(page, "Job id")).to_have_text(job_id)


def job_field(page: Page, name: str) -> Locator:
    """A field of the job's page: the definition after the term ``name``."""
    term = page.get_by_role("term").filter(has_text=re.compile(rf"^{re.escape(name)}$"))
    return term.locator("xpath=following-sibling::dd[1]")


def retry_job(page: Page) -> None:
    """Presses Retry on a failed job's page; it comes back to the page with the notice."""
    page.get_by_role("button", name="Retry").click()
    expect(page.get_by_role("status")).to_have_text(REQUEUED_MESSAGE)
