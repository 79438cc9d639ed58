"""The API against its own OpenAPI document: schemathesis over /api/v1/schema/, with every check it has.

Every operation gets schema-valid and schema-violating requests (positive and negative, coverage and
fuzzing), then a stateful run follows the document's links (a send's job to its status and retry, a page
of jobs to its newest, a sender domain to its verify and delete). Each answer must be no 5xx, a status, a
content type, headers and a body the document gives for that operation, a refusal of what the document
forbids, and an acceptance of what it allows.

Requests go through the production WSGI application in this process, so the test's database
transaction holds everything they write, and a send's broker message, published on commit, is never
sent: no worker runs and no webhook or email leaves. Sender domains go to the fake providers.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import hypothesis
import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, transaction
from django.http import HttpRequest
from django.middleware.csrf import get_token
from django.utils import timezone
from schemathesis.checks import negative_data_rejection, positive_data_acceptance
from schemathesis.generation.stateful.state_machine import StepInput, StepOutput

from accounts.models import MAX_RATE_LIMIT, Account
from accounts.plans import Plan
from accounts.services import account_set_rate_limit, provider_key_set
from notifications.models import JobStatus, JobType
from notifications.send_requests import TOO_MANY_RECIPIENTS
from notifications.services import LOCAL_URL_MESSAGE
from notifyhub.wsgi import application
from tests.clients import APIClient
from tests.conftest import ready_to_send
from tests.factories import DeliveryLogFactory, EmailEventFactory, FailedJobFactory, JobFactory
from tests.fakes.providers import FakePostmark, FakeResend, FakeSendGrid
from tests.providers_fixtures import POSTMARK_ACCOUNT_TOKEN, POSTMARK_KEY, RESEND_KEY, SENDGRID_KEY, serving

# A fixed seed and derandomised generation: CI runs the same requests every time.
SEED = 17
NEGATIVE_DATA_REJECTIONS = [
    *("400", "401", "403", "404", "405", "406", "409", "415", "422", "428", "429", "5xx"),  # schemathesis's own
    "413",  # a body past API_MAX_BODY_BYTES is refused whole, before its fields are read (docs/rules.md)
]
CONFIG = schemathesis.Config.from_dict(
    {
        "seed": SEED,
        "generation": {
            "deterministic": True,
            "max-examples": 40,
            "database": "none",
            # The test sends real credentials; generated ones could only be refused.
            "with-security-parameters": False,
        },
        "checks": {"negative_data_rejection": {"expected-statuses": NEGATIVE_DATA_REJECTIONS}},
        # The stateful run follows the document's own links, none that schemathesis would infer.
        "phases": {"stateful": {"inference": {"algorithms": []}}},
    }
)
# Enough scenarios that the links' walk does not hang on the order in which one run happens to draw them: at 30,
# an unrelated change once left GET job status unreached; at 60, the full suite once left the domain's verify
# unreached through a link (the run alone reached it), after the batches' operations joined the document.
STATEFUL = hypothesis.settings(
    max_examples=100,
    stateful_step_count=6,
    derandomize=True,
    database=None,
    deadline=None,
)
schema = schemathesis.openapi.from_wsgi("/api/v1/schema/", application, config=CONFIG)

# Refusals of schema-valid bodies by a rule about the account or the target, which no document for every
# account can state (docs/rules.md, "Senders" and "Webhooks"), or about the time of the request (a `sendAt` more than
# 30 days after it, docs/rules.md, "Scheduled sends"); any other refusal of one fails the test.
SEND_AT_TOO_FAR = re.escape("sendAt must be within 30 days")
# And the rules across an email's recipient fields, which a JSON Schema cannot state: at most 50 in `to`, `cc` and
# `bcc` together, none twice in another case or another field (docs/rules.md, "Rich email").
RECIPIENT_RULES = rf"{re.escape(TOO_MANY_RECIPIENTS)}|(cc|bcc)\[[0-9]+\] repeats the recipient .+"
# And the account's templates, and what Liquid a part holds: a send's template may not exist, or not render with its
# data, and a part may not parse (docs/templates.md).
TEMPLATE_RENDER_RULES = (
    r"Template .+ not found|Template .+ has no version [0-9]+|data is missing .+ for template .+"
    r"|Template .+ could not be rendered: .+"
)
TEMPLATE_SYNTAX_RULE = re.compile(r"(subject|html|text) has a syntax error on line [0-9]+: .+", re.DOTALL)
ACCOUNT_RULES = {
    "notifications_email_create": re.compile(
        rf"Cannot send from .+\. Use your verified domain example\.com instead\.|{SEND_AT_TOO_FAR}|{RECIPIENT_RULES}"
        rf"|{TEMPLATE_RENDER_RULES}",
        re.DOTALL,
    ),
    "templates_create": TEMPLATE_SYNTAX_RULE,
    "templates_update": TEMPLATE_SYNTAX_RULE,
    "templates_render_create": re.compile(TEMPLATE_RENDER_RULES, re.DOTALL),
    "notifications_webhook_create": re.compile(rf"{re.escape(LOCAL_URL_MESSAGE)}|{SEND_AT_TOO_FAR}"),
    "event_endpoints_create": re.compile(re.escape(LOCAL_URL_MESSAGE)),
    # The time of the request, as for sendAt: a recover's `since` neither ahead of it nor older than the jobs are kept
    # (docs/customer-webhooks.md, "Messages").
    "apps_endpoints_recover_create": re.compile(r"since must (not be in the future|be within the last [0-9]+ days)"),
    "apps_endpoints_create": re.compile(re.escape(LOCAL_URL_MESSAGE)),
    "apps_endpoints_partial_update": re.compile(re.escape(LOCAL_URL_MESSAGE)),
}


def accepts_valid_data_but_for_account_rules(ctx: Any, response: Any, case: schemathesis.Case) -> bool | None:
    rule = ACCOUNT_RULES.get(case.operation.definition.raw["operationId"])
    if rule and response.status_code == 400 and rule.fullmatch(response.json()["error"]):
        return None
    return positive_data_acceptance(ctx, response, case)


# A batch refuses an item that breaks the single send's schema in that item's slot, and accepts the rest: the batch is
# 202, and the slot is the refusal (docs/rules.md, "Batches"). Its own shape (`items` itself) is refused whole.
BATCHES = {"notifications_email_batch_create", "notifications_webhook_batch_create"}


def rejects_invalid_data_but_batch_items_in_their_slots(
    ctx: Any, response: Any, case: schemathesis.Case
) -> bool | None:
    if case.operation.definition.raw["operationId"] in BATCHES and response.status_code == 202:
        slots = response.json()["data"]["items"]
        if any(slot["status"] == 400 for slot in slots):
            return None
    return negative_data_rejection(ctx, response, case)


CHECKS = {
    "excluded_checks": [positive_data_acceptance, negative_data_rejection],
    "additional_checks": [
        accepts_valid_data_but_for_account_rules,
        rejects_invalid_data_but_batch_items_in_their_slots,
    ],
}


@dataclass(frozen=True)
class Credentials:
    api_key: str
    staff_cookie: str
    csrf_token: str

    def headers(self, operation: schemathesis.APIOperation) -> dict[str, str]:
        """The API key; for the admin endpoints, which take nothing else, the staff session and its CSRF token."""
        security = operation.definition.raw.get("security", [])
        if {"ApiKeyAuth": []} in security:
            return {"X-API-Key": self.api_key}
        if {"cookieAuth": []} in security:
            return {"Cookie": self.staff_cookie, "X-CSRFToken": self.csrf_token}
        return {}


@pytest.fixture(autouse=True)
def _connections_kept() -> Iterator[None]:
    # What Django's test client does around each request: the test's transaction outlives it.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def with_jobs(account: Account) -> None:
    """A delivered email with its events, then a failed webhook: the newest job on a page can be retried."""
    delivered = JobFactory(
        account=account,
        type=JobType.EMAIL,
        status=JobStatus.COMPLETED,
        payload={"to": "user@example.com", "subject": "Welcome", "body": "<p>Hello</p>"},
        attempts=1,
        started_at=timezone.now() - timedelta(seconds=2),
        completed_at=timezone.now(),
    )
    DeliveryLogFactory(job=delivered, attempt=1, status="success", used_provider="SENDGRID", error_message=None)
    EmailEventFactory(job=delivered)
    failed = FailedJobFactory(account=account)
    for attempt in (1, 2, 3):
        DeliveryLogFactory(job=failed, attempt=attempt)


@contextmanager
def fake_providers(settings: Any) -> Iterator[None]:
    """SendGrid, Resend and Postmark as new fakes that take the holder's keys, the settings pointing at them."""
    with (
        serving(FakeSendGrid(), settings, key=SENDGRID_KEY),
        serving(FakeResend(), settings, key=RESEND_KEY),
        serving(FakePostmark(), settings, key=POSTMARK_KEY) as postmark,
    ):
        postmark.accept_account_token(POSTMARK_ACCOUNT_TOKEN)
        yield


@pytest.fixture
def credentials(make_client: Any, django_user_model: Any) -> Credentials:
    """A paid holder with jobs, ready to send through all three providers, and a signed-in staff user.

    The holder's keys get the highest rate limit an account may have, as an operator gives a deployment's own
    services (docs/operations.md, "A custom rate limit"): the links' scenarios, some 600 requests of one key, outnumber
    the plan's minute of requests, and an operation answering 429 would go untested.
    """
    holder = ready_to_send(make_client(Plan.STARTUP), "SENDGRID")
    account_set_rate_limit(account=holder.account, rate=MAX_RATE_LIMIT)
    provider_key_set(account=holder.account, provider="RESEND", api_key=RESEND_KEY)
    provider_key_set(
        account=holder.account, provider="POSTMARK", api_key=POSTMARK_KEY, account_token=POSTMARK_ACCOUNT_TOKEN
    )
    with_jobs(holder.account)
    staff = django_user_model.objects.create_superuser("ops@notifyhub.local", "ops@notifyhub.local", "pw-for-ops")
    browser = APIClient()
    browser.force_login(staff)
    request = HttpRequest()
    token = get_token(request)
    cookie = f"sessionid={browser.cookies['sessionid'].value}; csrftoken={request.META['CSRF_COOKIE']}"
    return Credentials(api_key=holder.api_key, staff_cookie=cookie, csrf_token=token)


@pytest.fixture
def providers(settings: Any) -> Iterator[None]:
    with fake_providers(settings):
        yield


@schema.parametrize()
@hypothesis.settings(suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture])
@pytest.mark.usefixtures("providers")
def test_every_operation_answers_as_documented(case: schemathesis.Case, credentials: Credentials) -> None:
    case.call_and_validate(headers=credentials.headers(case.operation), **CHECKS)


# What the stateful run must have reached through a link, its parameters read from the answer before: a job's
# status (from a send, a page of jobs or a retry), and a sender domain's verification and removal.
REACHED_BY_LINKS = {
    ("GET /api/v1/notifications/jobs/{job_id}", 200),
    ("POST /api/v1/user/domain/verify", 200),
    ("DELETE /api/v1/user/domain", 200),
}


def linked_operations(document: dict[str, Any]) -> set[str]:
    """The operations with links in their answers, and those the links lead to (by operation id)."""
    operations = [operation for methods in document["paths"].values() for operation in methods.values()]
    links = {
        (operation["operationId"], link["operationId"])
        for operation in operations
        for response in operation["responses"].values()
        for link in response.get("links", {}).values()
    }
    return {operation_id for link in links for operation_id in link}


def test_the_documents_links_lead_where_they_say(credentials: Credentials, settings: Any) -> None:
    reached: set[tuple[str, int]] = set()
    # Every scenario starts at an operation with links: the others have had their examples above.
    linked = schema.include(operation_id=sorted(linked_operations(schema.raw_schema)))

    class FollowingLinks(linked.as_state_machine()):  # type: ignore[misc]
        """Each scenario starts from the fixture's state: what it wrote is rolled back, the fakes are new.

        Hypothesis replays scenarios and requires each to draw the same steps: which links it can follow
        depends on what the API answered, so every scenario must meet the same accounts, jobs and domains.
        """

        def setup(self) -> None:
            self.savepoint = transaction.savepoint()
            self.fakes = ExitStack()
            self.fakes.enter_context(fake_providers(settings))

        def teardown(self) -> None:
            self.fakes.close()
            transaction.savepoint_rollback(self.savepoint)

        def step(self, input: StepInput) -> StepOutput:
            output = super().step(input)
            if input.transition is not None and input.is_applied:
                reached.add((input.case.operation.label, output.response.status_code))
            return output

        def get_call_kwargs(self, case: schemathesis.Case) -> dict[str, Any]:
            return {"headers": credentials.headers(case.operation)}

        def validate_response(self, response: schemathesis.Response, case: schemathesis.Case, **kwargs: Any) -> None:
            case.validate_response(response, headers=kwargs["headers"], transport_kwargs=kwargs, **CHECKS)

    FollowingLinks.run(settings=STATEFUL)

    assert reached >= REACHED_BY_LINKS
