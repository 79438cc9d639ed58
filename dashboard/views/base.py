"""What every dashboard page shares: a signed-in holder with an account that is not deleted."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.mixins import LoginRequiredMixin
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import redirect

from accounts.models import Account


class HolderView(LoginRequiredMixin):
    """A page of the signed-in holder's account; ``self.account`` is theirs."""

    account: Account

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if request.user.is_authenticated:
            account = Account.objects.filter(user_id=request.user.pk, deleted_at__isnull=True).first()
            if account is None:
                # Staff made with createsuperuser have no account: their console is the admin.
                messages.info(request, "This user has no NotifyHub account; staff work in the admin.")
                return redirect("admin:index")
            self.account = account
            # base.html asks user.account for the navigation: answer from this row, not a second query.
            request.user.account = account
        return super().dispatch(request, *args, **kwargs)


def no_store(response: HttpResponse) -> HttpResponse:
    """A page showing a secret once must not be kept by the browser or a proxy."""
    response["Cache-Control"] = "no-store"
    return response
