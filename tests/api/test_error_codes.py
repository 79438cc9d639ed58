"""Every error's stable ``code`` (docs/errors.md): each one provoked, the catalogue unique and snake_case, and the
page and the OpenAPI document listing every code with its status.

Each code the API answers has a way to provoke it through the real endpoint below (``answers``); each that only the
dashboard's pages, the admin or the operator commands meet is raised by its service (``raises``).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.test import Client as HttpClient

import notifyhub.urls
from accounts.models import KeyMode, UsagePeriod
from accounts.plans import Plan
from accounts.selectors import current_period
from accounts.services import (
    account_create,
    account_set_monthly_limit,
    account_set_rate_limit,
    account_sign_up,
    api_key_create,
    api_key_revoke,
    provider_key_add,
    provider_key_move,
    provider_key_set,
)
from core.api.exceptions import error_status
from core.errors import CodedError
from customer_webhooks.models import App
from domains.models import DomainStatus, SenderDomain
from email_templates.services import template_create
from event_endpoints.services import endpoint_create
from notifications.models import JobType
from notifications.services import platform_email_send, webhook_test_send
from providers.base import CredentialRefused, ProviderError
from providers.postmark import MISSING_ACCOUNT_TOKEN
from tests.api import test_service_down
from tests.api.test_envelope import CODE, assert_error
from tests.api.test_hostile_input import post_raw
from tests.clients import APIClient
from tests.conftest import Client, ready_to_send
from tests.factories import AppFactory, EndpointFactory, FailedJobFactory
from tests.fakes.events import Delivery, PostmarkEvents, SendGridEvents
from tests.fakes.providers import FakeResend
from tests.providers_fixtures import RESEND_KEY
from tests.webhooks_inbound.conftest import post_events
from webhooks_inbound.services import (
    postmark_password_generate,
    resend_secret_set,
    sendgrid_key_set,
    tracking_credential_set,
)

ERRORS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "errors.md"
PING = "/api/v1/ping"
WEBHOOK = "/api/v1/notifications/webhook"
USAGE = "/api/v1/user/usage"
DOMAIN = "/api/v1/user/domain"


def error_classes() -> Iterator[type[CodedError]]:
    """Every error class under CodedError; the URLs import every module that defines one."""
    assert notifyhub.urls.urlpatterns
    pending = list(CodedError.__subclasses__())
    while pending:
        kind = pending.pop()
        pending.extend(kind.__subclasses__())
        yield kind


def catalogue() -> dict[str, int]:
    """Every code with its status: each class that sets a code of its own names a condition."""
    return {kind.code: error_status(kind) for kind in error_classes() if "code" in vars(kind)}


# --- the catalogue ----------------------------------------------------------------------------------------


def test_every_code_is_snake_case_and_names_one_condition() -> None:
    codes = [kind.code for kind in error_classes() if "code" in vars(kind)]

    assert [code for code in codes if not CODE.fullmatch(code)] == []
    assert sorted({code for code in codes if codes.count(code) > 1}) == []


def test_every_code_is_on_the_errors_page_with_its_status() -> None:
    rows = re.findall(r"^\| `([a-z0-9_]+)` \| (\d{3}) \|", ERRORS_PAGE.read_text(), flags=re.MULTILINE)
    documented = {code: int(status) for code, status in rows}

    assert len(rows) == len(documented), "a code documented twice"
    assert documented == catalogue()


def test_every_fixed_message_is_on_the_errors_page_word_for_word() -> None:
    page = ERRORS_PAGE.read_text()
    fixed = [kind.message for kind in error_classes() if "message" in vars(kind)]

    assert [message for message in fixed if f"`{message}`" not in page] == []


def test_each_error_answer_in_the_openapi_document_lists_codes_of_its_status(db: None) -> None:
    document = json.loads(APIClient().get("/api/v1/schema/?format=json").content)
    known = catalogue()
    listed: dict[str, set[str]] = {}

    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                if status.startswith("2"):
                    continue
                where = f"{method.upper()} {path} {status}"
                description, _, codes_listed = response["description"].rpartition("\n\n`code`: ")
                codes = re.findall(r"`([a-z0-9_]+)`", codes_listed)
                assert description, where
                assert codes, where
                assert {code: known.get(code) for code in codes} == dict.fromkeys(codes, int(status)), where
                listed[where] = set(codes)

    assert listed["POST /api/v1/notifications/email 403"] >= {"quota_exceeded", "routing_requires_paid_plan"}
    assert listed["GET /api/v1/notifications/jobs/{job_id} 404"] == {"job_not_found"}
    assert "quota_exceeded" in listed["POST /api/v1/user/jobs/{job_id}/retry 403"]
    assert listed["GET /api/v1/user/usage 401"] == {"authentication_required", "api_key_invalid"}


def test_the_error_envelope_requires_a_snake_case_code(db: None) -> None:
    document = json.loads(APIClient().get("/api/v1/schema/?format=json").content)
    envelope = document["components"]["schemas"]["ErrorEnvelope"]

    assert "code" in envelope["required"]
    assert envelope["properties"]["code"]["type"] == "string"
    assert re.fullmatch(envelope["properties"]["code"]["pattern"], "job_not_found")


# --- each code the API answers, provoked through its endpoint -----------------------------------------------

Provoke = Callable[[pytest.FixtureRequest], Any]
ANSWERED: list[Any] = []


def answers(code: str, status: int, message: str | re.Pattern[str]) -> Callable[[Provoke], Provoke]:
    """Registers a way to have the API answer ``code``; the answer must have this status and message."""

    def register(provoke: Provoke) -> Provoke:
        ANSWERED.append(pytest.param(code, status, message, provoke, id=code))
        return provoke

    return register


def client(request: pytest.FixtureRequest, plan: str = Plan.FREE, **account_fields: Any) -> Client:
    made: Client = request.getfixturevalue("make_client")(plan, **account_fields)
    return made


def signed_in(user: Any, *, csrf: bool = False) -> APIClient:
    browser = APIClient(enforce_csrf_checks=csrf)
    browser.force_login(user)
    return browser


def staff(request: pytest.FixtureRequest, *, superuser: bool) -> APIClient:
    users = request.getfixturevalue("django_user_model").objects
    make = users.create_superuser if superuser else users.create_user
    return signed_in(make("ops@notifyhub.local", "ops@notifyhub.local", "pw-for-ops", is_staff=True))


def restore(browser: APIClient, user_id: int) -> Any:
    return browser.post(f"/api/v1/admin/users/{user_id}/restore")


@answers("api_key_in_both_headers", 400, "Send the API key in one header only")
def both_key_headers(request: pytest.FixtureRequest) -> Any:
    key = client(request).api_key
    return APIClient().get(PING, HTTP_X_API_KEY=key, HTTP_AUTHORIZATION=f"Bearer {key}")


@answers("api_key_missing", 401, "API key is missing")
def no_key(request: pytest.FixtureRequest) -> Any:
    request.getfixturevalue("db")
    return APIClient().get(PING)


@answers("api_key_invalid", 401, "Invalid API key")
def unknown_key(request: pytest.FixtureRequest) -> Any:
    request.getfixturevalue("db")
    return APIClient().get(PING, HTTP_X_API_KEY="nh_" + "a" * 64)


@answers("authentication_required", 401, "Sign in or send an API key")
def neither_session_nor_key(request: pytest.FixtureRequest) -> Any:
    request.getfixturevalue("db")
    return APIClient().get(USAGE)


@answers("account_inactive", 403, "Account is inactive")
def inactive_account(request: pytest.FixtureRequest) -> Any:
    return client(request, is_active=False).get(PING)


@answers("api_key_scope_refused", 403, "This API key's scope does not allow this request")
def read_key_sending(request: pytest.FixtureRequest) -> Any:
    read_key = api_key_create(account=client(request).account, name="reports", scope="read")
    body = {"url": "https://hooks.example.com/in", "payload": {}}
    return APIClient().post(WEBHOOK, body, format="json", HTTP_X_API_KEY=read_key)


@answers("test_key_refused", 403, "Test keys cannot read or change live data; use a live key")
def usage_read_with_a_test_key(request: pytest.FixtureRequest) -> Any:
    test_key = api_key_create(account=client(request).account, name="Laptop", mode=KeyMode.TEST)
    return APIClient().get(USAGE, HTTP_X_API_KEY=test_key)


@answers("account_missing", 403, "This user has no NotifyHub account")
def user_without_account(request: pytest.FixtureRequest) -> Any:
    user = request.getfixturevalue("django_user_model").objects.create_user("nobody@example.com")
    return signed_in(user).get(USAGE)


@answers("csrf_failed", 403, "CSRF Failed: CSRF cookie not set.")
def session_post_without_csrf_token(request: pytest.FixtureRequest) -> Any:
    holder = client(request, Plan.STARTUP)
    return signed_in(holder.account.user, csrf=True).post(f"/api/v1/user/jobs/{uuid.uuid4()}/retry")


@answers("permission_denied", 403, "Permission denied")
def permission_refused(request: pytest.FixtureRequest) -> Any:
    def refuse(**_: Any) -> Any:
        raise PermissionDenied

    request.getfixturevalue("monkeypatch").setattr("notifications.views.jobs.job_list", refuse)
    return client(request).get("/api/v1/notifications/jobs")


@answers("rate_limited", 429, "Rate limit exceeded")
def over_the_rate_limit(request: pytest.FixtureRequest) -> Any:
    free = client(request)
    for _ in range(free.account.limits.requests_per_minute):
        free.get(PING)
    return free.get(PING)


@answers("validation_failed", 400, "url must be a valid HTTPS URL")
def invalid_field(request: pytest.FixtureRequest) -> Any:
    return client(request).send_webhook(url="http://hooks.example.com/in")


@answers("unknown_field", 400, "Unknown field: colour")
def unknown_field(request: pytest.FixtureRequest) -> Any:
    return client(request).send_webhook(colour="teal")


@answers("invalid_json", 400, "Request body must be valid JSON")
def not_json(request: pytest.FixtureRequest) -> Any:
    return post_raw(client(request), WEBHOOK, '{"url": ')


@answers("body_not_object", 400, "Request body must be a JSON object")
def not_an_object(request: pytest.FixtureRequest) -> Any:
    return post_raw(client(request), WEBHOOK, "[1, 2]")


@answers("body_too_deep", 400, "Request body must not be nested more than 64 levels deep")
def nested_too_deep(request: pytest.FixtureRequest) -> Any:
    return post_raw(client(request), WEBHOOK, '{"payload": ' + "[" * 65 + "]" * 65 + "}")


@answers("number_out_of_range", 400, "Request body has a number out of range: 1e400")
def number_beyond_a_double(request: pytest.FixtureRequest) -> Any:
    return post_raw(client(request), WEBHOOK, '{"payload": {"x": 1e400}}')


@answers("invalid_unicode", 400, "payload must be valid Unicode text (it holds an unpaired surrogate)")
def unpaired_surrogate(request: pytest.FixtureRequest) -> Any:
    return post_raw(client(request), WEBHOOK, '{"url": "https://a.example.com/", "payload": {"x": "\\ud800"}}')


@answers("bad_request", 400, "Bad request")
def host_not_served(request: pytest.FixtureRequest) -> Any:
    return APIClient().get(PING, HTTP_X_API_KEY=client(request).api_key, HTTP_HOST="evil.example.com")


@answers("not_found", 404, "Not found")
def unknown_route(request: pytest.FixtureRequest) -> Any:
    request.getfixturevalue("db")
    return APIClient().get("/api/v1/nowhere")


@answers("method_not_allowed", 405, 'Method "GET" not allowed.')
def wrong_method(request: pytest.FixtureRequest) -> Any:
    return client(request).get(WEBHOOK)


@answers("length_required", 411, "Send the request body with a Content-Length header, not chunked")
def chunked_body(request: pytest.FixtureRequest) -> Any:
    return post_raw(client(request), WEBHOOK, "{}", HTTP_TRANSFER_ENCODING="chunked", CONTENT_LENGTH="")


@answers("payload_too_large", 413, f"Request body must be at most {settings.API_MAX_BODY_BYTES // 1024} KB")
def body_too_large(request: pytest.FixtureRequest) -> Any:
    return post_raw(client(request), WEBHOOK, '{"payload": "' + "a" * settings.API_MAX_BODY_BYTES + '"}')


@answers("unsupported_media_type", 415, "Content-Type must be application/json")
def not_json_content_type(request: pytest.FixtureRequest) -> Any:
    free = client(request)
    return free.http.post(WEBHOOK, "url=x", content_type="text/plain", HTTP_X_API_KEY=free.api_key)


@answers(
    "platform_sender_only",
    400,
    f"Cannot send from ada@example.org. Only noreply@{settings.PLATFORM_DOMAIN} is allowed.",
)
def free_plan_sender(request: pytest.FixtureRequest) -> Any:
    return client(request).send_email(**{"from": "ada@example.org"})


@answers(
    "sender_outside_domain", 400, "Cannot send from ada@example.org. Use your verified domain example.com instead."
)
def sender_off_the_domain(request: pytest.FixtureRequest) -> Any:
    return ready_to_send(client(request, Plan.STARTUP)).send_email(**{"from": "ada@example.org"})


@answers("provider_not_configured", 400, "Provider RESEND is not configured for this customer")
def provider_without_key(request: pytest.FixtureRequest) -> Any:
    return ready_to_send(client(request, Plan.STARTUP), "SENDGRID").send_email(provider="RESEND")


@answers("fallback_not_configured", 400, "Fallback provider RESEND is not configured for this customer")
def fallback_without_key(request: pytest.FixtureRequest) -> Any:
    holder = ready_to_send(client(request, Plan.STARTUP), "SENDGRID")
    return holder.send_email(provider="SENDGRID", fallback="RESEND")


@answers("routing_requires_paid_plan", 403, "Per-message provider routing requires a paid plan")
def free_plan_routing(request: pytest.FixtureRequest) -> Any:
    return client(request).send_email(provider="SENDGRID")


@answers("priority_requires_paid_plan", 403, "Priority requires a paid plan")
def free_plan_priority(request: pytest.FixtureRequest) -> Any:
    return client(request).send_email(priority=1)


PROVIDER_KEY_MESSAGE = (
    "Please add at least one email provider API key (SendGrid, Resend, or Postmark) in Settings before sending emails."
)


@answers("provider_key_required", 403, PROVIDER_KEY_MESSAGE)
def paid_email_without_provider_key(request: pytest.FixtureRequest) -> Any:
    return client(request, Plan.STARTUP).send_email()


@answers(
    "sending_domain_required",
    403,
    "Paid plans must use a verified sending domain. Please add and verify your domain in Settings.",
)
def paid_email_without_domain(request: pytest.FixtureRequest) -> Any:
    holder = client(request, Plan.STARTUP)
    provider_key_set(account=holder.account, provider="SENDGRID", api_key="sendgrid-key")
    return holder.send_email()


@answers(
    "sending_domain_pending",
    403,
    "Your sending domain is pending verification. Please complete domain verification in Settings.",
)
def paid_email_with_pending_domain(request: pytest.FixtureRequest) -> Any:
    holder = client(request, Plan.STARTUP)
    provider_key_set(account=holder.account, provider="SENDGRID", api_key="sendgrid-key")
    SenderDomain.objects.create(account=holder.account, name="example.com", status=DomainStatus.PENDING)
    return holder.send_email()


@answers(
    "quota_exceeded",
    403,
    re.compile(r"Monthly usage limit exceeded \(\d+/\d+\)\. Upgrade your plan or wait for reset on \d+/\d+/\d{4}\."),
)
def quota_used_up(request: pytest.FixtureRequest) -> Any:
    free = client(request)
    start, _ = current_period(free.account)
    quota = free.account.limits.monthly_quota
    UsagePeriod.objects.update_or_create(account=free.account, period_start=start, defaults={"used": quota})
    return free.send_webhook()


@answers("duplicate_request", 409, "Duplicate request detected")
def idempotency_key_again(request: pytest.FixtureRequest) -> Any:
    free = client(request)
    free.send_webhook(idempotencyKey="order-42")
    return free.send_webhook(idempotencyKey="order-42")


@answers("job_not_found", 404, "Job not found")
def unknown_job(request: pytest.FixtureRequest) -> Any:
    return client(request).get(f"/api/v1/notifications/jobs/{uuid.uuid4()}")


@answers("address_suppressed", 409, "Address is already suppressed")
def address_suppressed_twice(request: pytest.FixtureRequest) -> Any:
    free = client(request)
    free.post("/api/v1/suppressions", {"email": "ada@example.com"})
    return free.post("/api/v1/suppressions", {"email": "ADA@example.com"})


@answers("suppression_not_found", 404, "Suppression not found")
def removal_of_an_address_not_suppressed(request: pytest.FixtureRequest) -> Any:
    return client(request).delete("/api/v1/suppressions/ada@example.com")


@answers("event_endpoint_limit", 409, "An account may have at most 5 event endpoints. Delete one first.")
def a_sixth_event_endpoint(request: pytest.FixtureRequest) -> Any:
    free = client(request)
    for _ in range(5):
        endpoint_create(account=free.account, url="https://hooks.example.com/events", events=["job.failed"])
    return free.post("/api/v1/event-endpoints", {"url": "https://hooks.example.com/events", "events": ["job.failed"]})


@answers("event_endpoint_not_found", 404, "Event endpoint not found")
def deletion_of_an_unknown_event_endpoint(request: pytest.FixtureRequest) -> Any:
    return client(request).delete(f"/api/v1/event-endpoints/{uuid.uuid4()}")


def template_saved(request: pytest.FixtureRequest, **parts: str) -> Client:
    free = client(request)
    body = {"alias": "welcome", "name": "Welcome", "subject": "Hi", "html": "<p>Hi</p>", **parts}
    free.post("/api/v1/templates", body)
    return free


def an_app_of(request: pytest.FixtureRequest) -> tuple[Client, App]:
    holder = client(request)
    return holder, AppFactory(account=holder.account)


@answers("app_not_found", 404, "App customer-9 not found")
def a_message_to_an_unknown_app(request: pytest.FixtureRequest) -> Any:
    return client(request).post("/api/v1/apps/customer-9/messages", {"eventType": "invoice.paid", "payload": {}})


@answers("message_not_found", 404, "Message not found")
def an_unknown_message(request: pytest.FixtureRequest) -> Any:
    holder, app = an_app_of(request)
    return holder.get(f"/api/v1/apps/{app.id}/messages/{uuid.uuid4()}")


@answers("endpoint_not_found", 404, "Endpoint not found")
def the_recover_of_an_unknown_endpoint(request: pytest.FixtureRequest) -> Any:
    holder, app = an_app_of(request)
    since = {"since": datetime.now(UTC).isoformat()}
    return holder.post(f"/api/v1/apps/{app.id}/endpoints/{uuid.uuid4()}/recover", since)


@answers("template_syntax_error", 400, "html has a syntax error on line 2: expected tag endif, found end of expression")
def a_template_that_does_not_parse(request: pytest.FixtureRequest) -> Any:
    body = {"alias": "welcome", "name": "Welcome", "subject": "Hi", "html": "<p>\n{% if x %}"}
    return client(request).post("/api/v1/templates", body)


@answers("template_data_missing", 400, "data is missing name for template welcome")
def a_render_without_its_data(request: pytest.FixtureRequest) -> Any:
    return template_saved(request, html="<p>{{ name }}</p>").post("/api/v1/templates/welcome/render", {"data": {}})


@answers("template_render_failed", 400, "Template welcome could not be rendered: html: loop iteration limit reached")
def a_render_past_the_loop_limit(request: pytest.FixtureRequest) -> Any:
    html = "{% for a in (1..1000) %}{% for b in (1..1000) %}{% endfor %}{% endfor %}"
    return template_saved(request, html=html).post("/api/v1/templates/welcome/render", {"data": {}})


@answers("send_template_not_found", 400, "Template welcome not found")
def an_email_with_an_unknown_template(request: pytest.FixtureRequest) -> Any:
    return client(request).post("/api/v1/notifications/email", {"to": "ada@example.com", "template": "welcome"})


@answers("send_template_version_not_found", 400, "Template welcome has no version 2")
def an_email_with_a_template_version_past_its_versions(request: pytest.FixtureRequest) -> Any:
    body = {"to": "ada@example.com", "template": "welcome", "templateVersion": 2}
    return template_saved(request).post("/api/v1/notifications/email", body)


@answers("template_not_found", 404, "Template welcome not found")
def an_unknown_template(request: pytest.FixtureRequest) -> Any:
    return client(request).get("/api/v1/templates/welcome")


@answers("template_version_not_found", 404, "Template welcome has no version 2")
def a_template_version_past_its_versions(request: pytest.FixtureRequest) -> Any:
    return template_saved(request).get("/api/v1/templates/welcome", version="2")


@answers("template_alias_taken", 409, "A template with alias welcome exists already")
def a_template_alias_again(request: pytest.FixtureRequest) -> Any:
    body = {"alias": "welcome", "name": "Welcome", "subject": "Hi", "html": "<p>Hi</p>"}
    return template_saved(request).post("/api/v1/templates", body)


@answers("template_limit", 409, "An account may have at most 100 templates. Delete one first.")
def a_101st_template(request: pytest.FixtureRequest) -> Any:
    free = client(request)
    for number in range(100):
        template_create(account=free.account, alias=f"t{number}", name="T", subject="Hi", html="<p>Hi</p>")
    return free.post("/api/v1/templates", {"alias": "more", "name": "More", "subject": "Hi", "html": "<p>Hi</p>"})


@answers("app_not_found", 404, "App acme not found")
def an_unknown_app(request: pytest.FixtureRequest) -> Any:
    return client(request).get("/api/v1/apps/acme")


@answers("app_uid_taken", 409, "An app with uid acme exists already")
def an_app_uid_again(request: pytest.FixtureRequest) -> Any:
    free = client(request)
    AppFactory(account=free.account, uid="acme")
    return free.post("/api/v1/apps", {"uid": "acme", "name": "Acme"})


@answers("endpoint_not_found", 404, "Endpoint not found")
def an_unknown_endpoint(request: pytest.FixtureRequest) -> Any:
    free = client(request)
    AppFactory(account=free.account, uid="acme")
    return free.get(f"/api/v1/apps/acme/endpoints/{uuid.uuid4()}")


@answers("endpoint_limit", 409, "An app may have at most 20 endpoints. Delete one first.")
def a_21st_endpoint(request: pytest.FixtureRequest) -> Any:
    free = client(request)
    EndpointFactory.create_batch(20, app=AppFactory(account=free.account, uid="acme"))
    return free.post("/api/v1/apps/acme/endpoints", {"url": "https://hooks.example.com/acme"})


@answers("job_not_retryable", 404, "Job not found or cannot be retried (must be in failed status)")
def retry_of_unknown_job(request: pytest.FixtureRequest) -> Any:
    return client(request).post(f"/api/v1/notifications/jobs/{uuid.uuid4()}/retry")


@answers("job_not_cancellable", 404, "Job not found or cannot be cancelled (must be pending)")
def cancel_of_unknown_job(request: pytest.FixtureRequest) -> Any:
    return client(request).post(f"/api/v1/notifications/jobs/{uuid.uuid4()}/cancel")


@answers("retry_needs_provider_key", 400, PROVIDER_KEY_MESSAGE)
def retry_of_paid_email_without_provider_key(request: pytest.FixtureRequest) -> Any:
    holder = client(request, Plan.STARTUP)
    failed = FailedJobFactory(account=holder.account, type=JobType.EMAIL)
    return holder.post(f"/api/v1/notifications/jobs/{failed.id}/retry")


@answers("domains_require_paid_plan", 403, "Custom sender domains require a paid plan")
def free_plan_domain(request: pytest.FixtureRequest) -> Any:
    return client(request).post(f"{DOMAIN}/request", {"domain": "example.com"})


@answers(
    "email_unconfirmed",
    403,
    "Confirm your email address first: follow the link we emailed you. Until then this account keeps no settings.",
)
def unconfirmed_account_domain(request: pytest.FixtureRequest) -> Any:
    holder = client(request, Plan.STARTUP, email_confirmed_at=None)
    return holder.post(f"{DOMAIN}/request", {"domain": "example.com"})


@answers("domain_needs_provider_key", 400, "Add at least one provider API key before adding a sending domain.")
def domain_without_provider_key(request: pytest.FixtureRequest) -> Any:
    return client(request, Plan.STARTUP).post(f"{DOMAIN}/request", {"domain": "example.com"})


@answers(
    "no_provider_can_register",
    400,
    f"No provider can register the domain: {MISSING_ACCOUNT_TOKEN}; skipped in domain verification",
)
def domain_with_postmark_key_alone(request: pytest.FixtureRequest) -> Any:
    holder = client(request, Plan.STARTUP)
    provider_key_set(account=holder.account, provider="POSTMARK", api_key="postmark-key")
    return holder.post(f"{DOMAIN}/request", {"domain": "example.com"})


@answers("domain_exists", 409, "Your account already has the sender domain example.com. Delete it first.")
def second_domain(request: pytest.FixtureRequest) -> Any:
    holder = ready_to_send(client(request, Plan.STARTUP))
    return holder.post(f"{DOMAIN}/request", {"domain": "example.org"})


@answers("domain_not_found", 404, "No sender domain. Request one first.")
def no_domain(request: pytest.FixtureRequest) -> Any:
    return client(request, Plan.STARTUP).get(DOMAIN)


@answers("domain_registration_failed", 502, re.compile(r"Could not register em\.example\.com with RESEND: 500 .+"))
def provider_refuses_the_domain(request: pytest.FixtureRequest) -> Any:
    holder = client(request, Plan.STARTUP)
    resend: FakeResend = request.getfixturevalue("resend")
    provider_key_set(account=holder.account, provider="RESEND", api_key=RESEND_KEY)
    resend.fail(500, endpoint="domain_create")
    return holder.post(f"{DOMAIN}/request", {"domain": "example.com"})


@answers("staff_sign_in_required", 403, "Sign in to the admin as staff first; API keys are not accepted here")
def admin_endpoint_with_a_key(request: pytest.FixtureRequest) -> Any:
    holder = client(request)
    return holder.http.post(f"/api/v1/admin/users/{holder.account.user_id}/restore", HTTP_X_API_KEY=holder.api_key)


@answers("staff_only", 403, "Staff only")
def admin_endpoint_for_a_holder(request: pytest.FixtureRequest) -> Any:
    holder = client(request)
    return restore(signed_in(holder.account.user), holder.account.user_id)


@answers("staff_permission_missing", 403, "Your staff user lacks the permission accounts.change_account")
def staff_without_the_permission(request: pytest.FixtureRequest) -> Any:
    return restore(staff(request, superuser=False), client(request).account.user_id)


@answers("user_not_found", 404, "User not found")
def restore_of_unknown_user(request: pytest.FixtureRequest) -> Any:
    return restore(staff(request, superuser=True), 999_999)


@answers("account_not_deleted", 409, "This account is not deleted")
def restore_of_live_account(request: pytest.FixtureRequest) -> Any:
    return restore(staff(request, superuser=True), client(request).account.user_id)


def sendgrid_events(holder: Client) -> SendGridEvents:
    events = SendGridEvents()
    sendgrid_key_set(account=holder.account, verification_key=events.verification_key)
    return events


@answers("customer_not_found", 404, "Unknown customerId")
def events_for_unknown_customer(request: pytest.FixtureRequest) -> Any:
    request.getfixturevalue("db")
    return post_events("postmark", str(uuid.uuid4()), Delivery(b"{}", {}))


@answers("events_not_set_up", 401, "SendGrid events are not set up for this account")
def events_not_set_up(request: pytest.FixtureRequest) -> Any:
    return post_events("sendgrid", client(request, Plan.STARTUP).account, Delivery(b"[]", {}))


@answers("basic_auth_invalid", 401, "Invalid Basic Auth credentials")
def postmark_events_with_wrong_password(request: pytest.FixtureRequest) -> Any:
    holder = client(request, Plan.STARTUP)
    events = PostmarkEvents(postmark_password_generate(account=holder.account))
    delivery = events.deliver(events.event("Delivery", message_id="m"), password="wrong")
    return post_events("postmark", holder.account, delivery)


@answers("signature_stale", 401, "The signature timestamp is missing or more than 5 minutes old")
def sendgrid_events_signed_an_hour_ago(request: pytest.FixtureRequest) -> Any:
    holder = client(request, Plan.STARTUP)
    events = sendgrid_events(holder)
    delivery = events.batch([events.event("delivered")], signed_at=int(time.time()) - 3600)
    return post_events("sendgrid", holder.account, delivery)


@answers("signature_invalid", 401, "Invalid SendGrid signature")
def sendgrid_events_changed_after_signing(request: pytest.FixtureRequest) -> Any:
    holder = client(request, Plan.STARTUP)
    events = sendgrid_events(holder)
    signed = events.batch([events.event("delivered")])
    return post_events("sendgrid", holder.account, Delivery(signed.body + b" ", signed.headers))


@answers("batch_too_large", 413, "A batch must hold at most 10000 events")
def sendgrid_batch_too_large(request: pytest.FixtureRequest) -> Any:
    holder = client(request, Plan.STARTUP)
    events = sendgrid_events(holder)
    batch = [{"event": "delivered", "sg_event_id": str(n)} for n in range(10_001)]
    return post_events("sendgrid", holder.account, events.batch(batch))


@answers("event_payload_invalid", 400, "The body is not a SendGrid event payload")
def sendgrid_body_of_another_shape(request: pytest.FixtureRequest) -> Any:
    holder = client(request, Plan.STARTUP)
    events = sendgrid_events(holder)
    return post_events("sendgrid", holder.account, events.batch({"event": "delivered"}))  # type: ignore[arg-type]


@answers("internal_error", 500, "Internal server error")
def a_bug(request: pytest.FixtureRequest) -> Any:
    def fail(**_: Any) -> Any:
        raise RuntimeError("a bug")

    request.getfixturevalue("monkeypatch").setattr("notifications.views.jobs.job_list", fail)
    return client(request).get("/api/v1/notifications/jobs")


@pytest.mark.parametrize(("code", "status", "message", "provoke"), ANSWERED)
def test_the_api_answers_each_code_with_its_status_and_message(
    request: pytest.FixtureRequest, code: str, status: int, message: str | re.Pattern[str], provoke: Provoke
) -> None:
    response = provoke(request)

    if isinstance(message, str):
        assert_error(response, status, message, code)
    else:
        body = response.json()
        assert (response.status_code, body["success"], body["code"]) == (status, False, code)
        assert message.fullmatch(body["error"]), body["error"]


# The default connection pointed at no database, for the whole test (a fixture: the provocations above share
# the test's transaction, which this takes away).
database_down = test_service_down.database_down
ANSWERED_WITH_THE_DATABASE_DOWN = ("service_unavailable", "unhealthy")


def test_an_api_call_with_the_database_down_answers_service_unavailable(free: Client, database_down: None) -> None:
    assert_error(free.get(PING), 503, "Service temporarily unavailable", "service_unavailable")


def test_the_health_check_with_the_database_down_answers_unhealthy(free: Client, database_down: None) -> None:
    response = APIClient().get("/api/v1/health")

    body = response.json()
    assert (response.status_code, body["error"], body["code"]) == (503, "Service unavailable: database", "unhealthy")
    assert body["details"] == {"database": "down", "broker": "ok"}


@pytest.mark.parametrize("path", [PING, USAGE])
def test_a_401_names_both_ways_to_send_the_key(db: None, path: str) -> None:
    response = APIClient().get(path)

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="NotifyHub", ApiKey realm="NotifyHub", header="X-API-Key"'


def test_a_bug_outside_the_rest_framework_is_internal_error_in_the_envelope(
    startup: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(**_: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr("webhooks_inbound.views.receiving_account", fail)
    response = HttpClient(raise_request_exception=False).post(
        f"/api/v1/webhooks/postmark/{startup.account.public_id}", b"{}", content_type="application/json"
    )

    assert_error(response, 500, "Internal server error", "internal_error")


# --- each code only the dashboard, the admin or a command meets, raised by its service ---------------------

Raise = Callable[[pytest.FixtureRequest], object]
RAISED: list[Any] = []


def raises(code: str, message: str) -> Callable[[Raise], Raise]:
    """Registers a service call that must raise the condition ``code`` with this message."""

    def register(call: Raise) -> Raise:
        RAISED.append(pytest.param(code, message, call, id=code))
        return call

    return register


def provider_checking_keys(request: pytest.FixtureRequest, error: ProviderError) -> None:
    """Every provider's key check raises ``error``."""

    class Checker:
        def check_key(self, credentials: Any) -> None:
            raise error

    request.getfixturevalue("monkeypatch").setattr("accounts.services.get_provider", lambda name: Checker())


@raises("email_taken", "An account with this email already exists. Sign in instead.")
def sign_up_with_a_taken_address(request: pytest.FixtureRequest) -> object:
    request.getfixturevalue("db")
    account_create(email="ada@example.com", plan=Plan.FREE)
    return account_sign_up(email="ada@example.com", password="a-long-password-1")


@raises("email_not_sent", "The email could not be sent: disk full")
def platform_email_the_backend_cannot_send(request: pytest.FixtureRequest) -> object:
    class Unsendable:
        def send(self) -> None:
            raise OSError("disk full")

    request.getfixturevalue("monkeypatch").setattr("notifications.services.build_message", lambda email: Unsendable())
    return platform_email_send(to="ada@example.com", subject="Hi", html="<p>Hi</p>")


@raises(
    "provider_keys_require_paid_plan",
    "Provider keys are for paid plans (Indie and Startup). On the Free plan NotifyHub's own providers send your email.",
)
def free_plan_provider_key(request: pytest.FixtureRequest) -> object:
    return provider_key_add(account=client(request).account, provider="SENDGRID", api_key="sendgrid-key")


@raises("provider_credential_refused", "SendGrid refused this API key (401 unauthorized). Nothing was saved.")
def provider_refuses_the_key(request: pytest.FixtureRequest) -> object:
    refusal = ProviderError("SENDGRID", "401 unauthorized", transient=False, status=401)
    provider_checking_keys(request, CredentialRefused(refusal, credential="api_key"))
    return provider_key_add(account=client(request, Plan.STARTUP).account, provider="SENDGRID", api_key="key")


@raises(
    "provider_unreachable",
    "SendGrid could not be reached (connection refused), so the key was not checked and not saved.",
)
def provider_not_reached(request: pytest.FixtureRequest) -> object:
    provider_checking_keys(request, ProviderError("SENDGRID", "connection refused", transient=True))
    return provider_key_add(account=client(request, Plan.STARTUP).account, provider="SENDGRID", api_key="key")


@raises(
    "provider_key_unchecked",
    "SendGrid could not check the key (503 unavailable), so it was not saved. Try again in a moment.",
)
def provider_fails_to_check(request: pytest.FixtureRequest) -> object:
    provider_checking_keys(request, ProviderError("SENDGRID", "503 unavailable", transient=True, status=503))
    return provider_key_add(account=client(request, Plan.STARTUP).account, provider="SENDGRID", api_key="key")


@raises("provider_key_not_found", "There is no SendGrid key to move.")
def move_of_a_missing_key(request: pytest.FixtureRequest) -> object:
    return provider_key_move(account=client(request, Plan.STARTUP).account, provider="SENDGRID", offset=-1)


@raises("sendgrid_key_invalid", "The SendGrid verification key must be the base64 public key SendGrid shows")
def sendgrid_key_not_a_key(request: pytest.FixtureRequest) -> object:
    return sendgrid_key_set(account=client(request, Plan.STARTUP).account, verification_key="not a key")


@raises("resend_secret_invalid", "The Resend signing secret must be the whsec_... secret Resend shows")
def resend_secret_not_a_secret(request: pytest.FixtureRequest) -> object:
    return resend_secret_set(account=client(request, Plan.STARTUP).account, signing_secret="not a secret")


@raises("tracking_credential_not_settable", "postmark has no key or secret to set; Postmark's password is generated")
def postmark_credential_set(request: pytest.FixtureRequest) -> object:
    return tracking_credential_set(account=client(request, Plan.STARTUP).account, provider="postmark", value="x")


@raises("url_not_public", "url must not point to a local or private network address")
def sample_webhook_to_a_private_address(request: pytest.FixtureRequest) -> object:
    return webhook_test_send(account=client(request).account, url="https://127.0.0.1/hook")


@raises("monthly_limit_invalid", "A monthly limit must be a whole number, 1 or more.")
def monthly_limit_of_zero(request: pytest.FixtureRequest) -> object:
    return account_set_monthly_limit(account=client(request).account, limit=0)


@raises("rate_limit_invalid", "A rate limit must be a whole number of requests a minute, from 1 to 1,000,000.")
def rate_limit_of_zero(request: pytest.FixtureRequest) -> object:
    return account_set_rate_limit(account=client(request).account, rate=0)


@raises("api_key_name_invalid", "An API key's name must be 1 to 64 characters on one line.")
def key_name_on_two_lines(request: pytest.FixtureRequest) -> object:
    return api_key_create(account=client(request).account, name="two\nlines")


@raises("api_key_name_taken", "An active API key is named Default already.")
def key_name_twice(request: pytest.FixtureRequest) -> object:
    return api_key_create(account=client(request).account, name="Default")


@raises("api_key_limit", "An account may have at most 10 active API keys. Revoke one first.")
def eleventh_key(request: pytest.FixtureRequest) -> object:
    account = client(request).account
    for number in range(2, 11):
        api_key_create(account=account, name=f"key {number}")
    return api_key_create(account=account, name="key 11")


@raises("api_key_not_found", "There is no active API key named CI.")
def revoke_of_a_missing_key(request: pytest.FixtureRequest) -> object:
    return api_key_revoke(account=client(request).account, name="CI")


@pytest.mark.parametrize(("code", "message", "call"), RAISED)
def test_each_condition_outside_the_api_is_raised_with_its_code_and_message(
    request: pytest.FixtureRequest, code: str, message: str, call: Raise
) -> None:
    with pytest.raises(CodedError) as raised:
        call(request)

    assert (raised.value.code, raised.value.message, str(raised.value)) == (code, message, message)


def test_every_code_is_provoked_above() -> None:
    provoked = {case.values[0] for case in (*ANSWERED, *RAISED)} | set(ANSWERED_WITH_THE_DATABASE_DOWN)

    assert sorted(set(catalogue()) - provoked) == []
    assert sorted(provoked - set(catalogue())) == []
