"""The holder's jobs: a filtered list, one job with its attempts and events, Retry and Cancel."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.utils.http import content_disposition_header
from django.views import View
from django.views.generic import TemplateView

from core.errors import DomainError, NotFound
from dashboard.forms import JobFilterForm
from dashboard.views.base import HolderView
from dashboard.views.paging import page_query
from notifications.models import JobStatus, JobType
from notifications.selectors import attachment_content, attachment_get, attempt_rounds, job_get, job_page, owns_job
from notifications.services import CANCELLED_MESSAGE, REQUEUED_MESSAGE, job_cancel, job_retry

JOBS_PER_PAGE = 25


class JobsView(HolderView, View):
    template_name = "dashboard/jobs.html"

    def get(self, request: HttpRequest) -> HttpResponse:
        form = JobFilterForm(request.GET)
        if not form.is_valid():
            context = {"form": form, "jobs": [], "page": 1, "filtered": True}
            return render(request, self.template_name, context, status=400)
        page = form.cleaned_data["page"] or 1
        filters = form.filters()
        jobs, has_next = job_page(account=self.account, page=page, limit=JOBS_PER_PAGE, filters=filters)
        context = {
            "form": form,
            "jobs": jobs,
            "page": page,
            "filtered": filters.any(),
            "previous_query": page_query(request.GET, page - 1) if page > 1 else None,
            "next_query": page_query(request.GET, page + 1) if has_next else None,
        }
        return render(request, self.template_name, context)


@dataclass(frozen=True)
class EmailMessage:
    """An email job's recipients, reply-to and labels, as its page shows them; each list or mapping empty when the
    email was sent without it (the payload keeps a key only when the client sent it)."""

    to: str
    cc: list[str]
    bcc: list[str]
    reply_to: list[str]
    tags: list[str]
    metadata: dict[str, str]
    # Suppressed cc and bcc addresses, left out of the message: [{email, reason}].
    skipped: list[dict[str, str]]

    @classmethod
    def of(cls, payload: dict[str, Any]) -> EmailMessage:
        reply_to = payload.get("replyTo") or []  # one address or a list, as sent
        return cls(
            to=payload.get("to", ""),
            cc=payload.get("cc") or [],
            bcc=payload.get("bcc") or [],
            reply_to=[reply_to] if isinstance(reply_to, str) else reply_to,
            tags=payload.get("tags") or [],
            metadata=payload.get("metadata") or {},
            skipped=payload.get("skippedRecipients") or [],
        )


class JobView(HolderView, TemplateView):
    template_name = "dashboard/job.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        try:
            job = job_get(account=self.account, job_id=str(kwargs["job_id"]))
        except NotFound:
            raise Http404("No such job") from None
        return {
            **super().get_context_data(**kwargs),
            "job": job,
            "payload": json.dumps(job.payload, indent=2, ensure_ascii=False),
            "message": EmailMessage.of(job.payload) if job.type == JobType.EMAIL else None,
            "rounds": attempt_rounds(job),
            "can_retry": job.status == JobStatus.FAILED,
            "can_cancel": job.status == JobStatus.PENDING,
        }


class JobAttachmentView(HolderView, View):
    """One file of one of the holder's jobs, as a download: never shown in the page's own origin."""

    def get(self, request: HttpRequest, job_id: UUID, position: int) -> StreamingHttpResponse:
        attachment = attachment_get(account=self.account, job_id=job_id, position=position)
        if attachment is None:
            raise Http404("No such attachment")
        # Slice by slice from the database, as a delivery reads it: the web process never holds the whole file.
        content = attachment_content(job_id=job_id, position=position, size=attachment.size)
        response = StreamingHttpResponse(content, content_type=download_type(attachment.content_type))
        response["Content-Length"] = attachment.size
        response["Content-Disposition"] = str(
            content_disposition_header(as_attachment=True, filename=attachment.filename)
        )
        response["X-Content-Type-Options"] = "nosniff"
        response["Cache-Control"] = "private, no-store"
        return response


# Subtypes a browser may render as a page or run (HTML, SVG and other XML, scripts): a client's file, on this origin.
RENDERED_SUBTYPE = re.compile(r"html|xml|svg|script", re.IGNORECASE)
# Main types served under their own name; anything else (multipart, message, an unknown one) as bytes.
SERVED_AS_IS = frozenset({"application", "audio", "font", "image", "model", "text", "video"})


def download_type(content_type: str) -> str:
    """The type a download is served as: its own, unless a browser could render it (application/octet-stream)."""
    maintype, _, subtype = content_type.partition("/")
    if RENDERED_SUBTYPE.search(subtype) or maintype.lower() not in SERVED_AS_IS:
        return "application/octet-stream"
    return content_type


class JobActionView(HolderView, View):
    """One of the API's operations on a job, with its rules and its words; back to the job's page."""

    success_message: str

    def act(self, job_id: UUID) -> None:
        raise NotImplementedError

    def post(self, request: HttpRequest, job_id: UUID) -> HttpResponse:
        try:
            self.act(job_id)
        except DomainError as error:
            # Not in the status the operation needs (any more), or, for Retry, no provider to send an email with;
            # another account's job is not found.
            if not owns_job(account=self.account, job_id=job_id):
                raise Http404("No such job") from None
            messages.error(request, error.message)
        else:
            messages.success(request, self.success_message)
        return redirect("job", job_id=job_id)


class JobRetryView(JobActionView):
    """Retry with the API's rules (notifications.services.job_retry)."""

    success_message = REQUEUED_MESSAGE

    def act(self, job_id: UUID) -> None:
        job_retry(account=self.account, job_id=str(job_id))


class JobCancelView(JobActionView):
    """Cancel with the API's rules (notifications.services.job_cancel)."""

    success_message = CANCELLED_MESSAGE

    def act(self, job_id: UUID) -> None:
        job_cancel(account=self.account, job_id=str(job_id))
