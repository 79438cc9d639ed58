"""Sign-up with email confirmation, sign-in and password reset (Django's auth views, our forms)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth import get_user_model, login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.encoding import force_bytes, force_str
from django.utils.http import urlsafe_base64_decode, urlsafe_base64_encode
from django.views import View
from django.views.decorators.http import require_POST
from django.views.generic import FormView

from accounts.models import Account
from accounts.services import account_sign_up, email_confirm
from core.errors import DomainError
from core.public_url import public_url
from core.signin import attempt_refusal, sign_in_refusal
from dashboard.forms import ConfirmPasswordForm, EmailAuthenticationForm, PlatformPasswordResetForm, SignUpForm
from dashboard.mail import send_platform_email
from dashboard.tokens import email_confirmation_token

CONFIRM_SUBJECT = "Confirm your NotifyHub email address"


def send_confirmation(account: Account) -> bool:
    user = account.user
    path = reverse(
        "confirm-email",
        args=[urlsafe_base64_encode(force_bytes(user.pk)), email_confirmation_token.make_token(user)],
    )
    html = render_to_string("registration/confirm_email_message.html", {"link": public_url(path)})
    return send_platform_email(to=user.email, subject=CONFIRM_SUBJECT, html=html)


class SignUpView(FormView):
    template_name = "registration/signup.html"
    form_class = SignUpForm

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.user.is_authenticated:
            return redirect("dashboard")
        return super().get(request, *args, **kwargs)

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return attempt_refusal(request, "sign-up", request.POST.get("email", "")) or super().post(
            request, *args, **kwargs
        )

    def form_valid(self, form: SignUpForm) -> HttpResponse:
        try:
            account = account_sign_up(email=form.cleaned_data["email"], password=form.cleaned_data["password"])
        except DomainError as error:
            form.add_error("email", error.message)
            return self.form_invalid(form)
        self.request.session["signed_up"] = {
            "email": account.user.email,
            "sent": send_confirmation(account),
        }
        return redirect("signup-sent")


def signup_sent(request: HttpRequest) -> HttpResponse:
    signed_up = request.session.get("signed_up")
    if not signed_up:
        return redirect("signup")
    return render(request, "registration/signup_sent.html", signed_up)


class ConfirmEmailView(View):
    """GET shows the form, POST confirms: a mail scanner opening the link confirms nothing.

    The link proves only that its holder reads the mailbox; whoever signed up chose the password. Confirming asks
    for that password too (unless its user is already signed in here), so only someone who has both confirms and
    is signed in. The owner of an address someone else signed up with cannot, and signs up again instead, which
    starts the account over (docs/dashboard.md, "The link").
    """

    def get(self, request: HttpRequest, uidb64: str, token: str) -> HttpResponse:
        user = self._user(uidb64, token)
        return self._page(request, user, ConfirmPasswordForm(user=user))

    def post(self, request: HttpRequest, uidb64: str, token: str) -> HttpResponse:
        user = self._user(uidb64, token)
        if user is None:
            return self._page(request, None, None, status=400)
        form = ConfirmPasswordForm(request.POST, user=user)
        if not self._signed_in_as(request, user) and not form.is_valid():
            return self._page(request, user, form, status=400)
        email_confirm(account=user.account)
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(request, "Your email address is confirmed. Next: create your API key.")
        return redirect("dashboard")

    def _page(
        self, request: HttpRequest, user: Any, form: ConfirmPasswordForm | None, *, status: int = 200
    ) -> HttpResponse:
        context = {
            "valid": user is not None,
            "email": getattr(user, "email", ""),
            "form": None if user is None or self._signed_in_as(request, user) else form,
        }
        return render(request, "registration/confirm_email.html", context, status=status)

    @staticmethod
    def _signed_in_as(request: HttpRequest, user: Any) -> bool:
        return bool(request.user.is_authenticated and request.user.pk == user.pk)

    @staticmethod
    def _user(uidb64: str, token: str) -> Any:
        try:
            pk = force_str(urlsafe_base64_decode(uidb64))
        except (ValueError, TypeError):
            return None
        if not pk.isdigit():
            return None
        user = get_user_model().objects.select_related("account").filter(pk=int(pk), is_active=True).first()
        if user is None or not hasattr(user, "account") or not email_confirmation_token.check_token(user, token):
            return None
        return user


@require_POST
@login_required
def resend_confirmation(request: HttpRequest) -> HttpResponse:
    # A user without an account (staff) has none: the reverse accessor's error is an AttributeError.
    account: Account | None = getattr(request.user, "account", None)
    refusal = attempt_refusal(request, "confirmation", getattr(request.user, "email", ""))
    if refusal is not None:
        return refusal
    if account is None or account.is_confirmed:
        messages.info(request, "Your email address is already confirmed.")
    elif send_confirmation(account):
        messages.success(request, f"We sent a new confirmation link to {account.user.email}.")
    else:
        messages.error(request, "The email could not be sent just now. Try again in a few minutes.")
    return redirect("dashboard")


class SignInView(auth_views.LoginView):
    form_class = EmailAuthenticationForm
    redirect_authenticated_user = True

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return sign_in_refusal(request, request.POST.get("username", ""), who="Dashboard") or super().post(
            request, *args, **kwargs
        )


class PasswordResetView(auth_views.PasswordResetView):
    form_class = PlatformPasswordResetForm
    email_template_name = "registration/password_reset_email.html"

    @property
    def extra_email_context(self) -> dict[str, str]:
        # The link's site is PUBLIC_URL, never the request's Host header, which whoever asks for the reset writes.
        return {"public_url": public_url("")}

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return attempt_refusal(request, "password-reset", request.POST.get("email", "")) or super().post(
            request, *args, **kwargs
        )


class PasswordChangeView(auth_views.PasswordChangeView):
    def get_success_url(self) -> str:
        messages.success(self.request, "Your password is changed.")
        return reverse("account")
