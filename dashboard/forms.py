"""The dashboard's forms: each field labelled as the page shows it, each refusal in words."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.forms import AuthenticationForm, PasswordResetForm
from django.template.loader import render_to_string

from dashboard.mail import send_platform_email


class SignUpForm(forms.Form):
    email = forms.EmailField(label="Email", widget=forms.EmailInput(attrs={"autocomplete": "email", "autofocus": True}))
    password = forms.CharField(
        label="Password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text=password_validation.password_validators_help_text_html(),
    )

    def clean_email(self) -> str:
        return str(self.cleaned_data["email"]).strip().lower()

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        email, password = cleaned.get("email"), cleaned.get("password")
        if email and password:
            # The validators compare the password with the address, as they would with a saved user.
            user = get_user_model()(username=email, email=email)
            try:
                password_validation.validate_password(password, user)
            except forms.ValidationError as error:
                self.add_error("password", error)
        return cleaned


class EmailAuthenticationForm(AuthenticationForm):
    """Django's sign-in form, asking for the email address the account was made with, in any letter case."""

    username = forms.EmailField(
        label="Email", widget=forms.EmailInput(attrs={"autocomplete": "email", "autofocus": True})
    )
    error_messages = {
        "invalid_login": "Wrong email or password.",
        "inactive": "This account is deleted.",
    }

    def clean(self) -> dict[str, Any]:
        email = str(self.cleaned_data.get("username") or "").strip()
        stored = get_user_model().objects.filter(username__iexact=email).values_list("username", flat=True).first()
        if stored:
            self.cleaned_data["username"] = stored
        return super().clean()


class PlatformPasswordResetForm(PasswordResetForm):
    """Django's reset form, mailing through the platform's providers like every NotifyHub email."""

    email = forms.EmailField(label="Email", widget=forms.EmailInput(attrs={"autocomplete": "email", "autofocus": True}))

    def send_mail(
        self,
        subject_template_name: str,
        email_template_name: str,
        context: dict[str, Any],
        from_email: str | None,
        to_email: str,
        html_email_template_name: str | None = None,
    ) -> None:
        subject = "".join(render_to_string(subject_template_name, context).splitlines())
        send_platform_email(to=to_email, subject=subject, html=render_to_string(email_template_name, context))


class ConfirmPasswordForm(forms.Form):
    """Asks for the holder's password again before something that cannot be undone by them."""

    password = forms.CharField(
        label="Password", strip=False, widget=forms.PasswordInput(attrs={"autocomplete": "current-password"})
    )

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.user = user

    def clean_password(self) -> str:
        password = str(self.cleaned_data["password"])
        if not self.user.check_password(password):
            raise forms.ValidationError("That is not your password.")
        return password
