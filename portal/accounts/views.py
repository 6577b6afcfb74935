"""Accounts: sign up, log in (Django's view, throttled), e-mail confirmation, settings (the verdict e-mail), the API
token page, and the page of a locked-out log-in.

Sign-up mails a confirmation link; until it is followed the account can log in and read, sees a banner, and cannot
upload (``leaderboard.web.permissions``; granted by ``backends.UploadPermissionBackend``).

Sign-up and log-in POSTs are throttled per client address (``leaderboard.web.throttles``); wrong passwords lock a
username out from that address (django-axes, ``locked_out``). Each answers 429 with Retry-After."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import UserCreationForm
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST
from rest_framework.authtoken.models import Token

from leaderboard.web.throttles import LoginThrottle, SignupThrottle, throttled, too_many_requests
from portal.accounts import services
from portal.accounts.models import AccountEmail


class SignupForm(UserCreationForm):
    email = forms.EmailField(required=True, help_text="For password resets; never shown on the site.")

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")

    def clean_email(self) -> str:
        email = self.cleaned_data["email"].strip()
        if get_user_model().objects.filter(email__iexact=email).exists():
            raise ValidationError("An account with this e-mail address exists; reset its password instead.")
        return email

    def clean_username(self):
        username = super().clean_username()
        if not username:  # Django's own check already refused it
            return username
        try:
            return services.username_check(username)
        except ValidationError as exc:
            raise ValidationError(exc.message_dict["username"]) from None


@throttled(SignupThrottle, what="sign-ups")
def signup(request: HttpRequest) -> HttpResponse:
    next_url = request.POST.get("next") or request.GET.get("next") or ""
    if not url_has_allowed_host_and_scheme(
        next_url, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        next_url = ""
    if request.user.is_authenticated:
        return redirect(next_url or "home")
    if request.method == "POST":
        form = SignupForm(request.POST)
        if form.is_valid():
            try:
                user = services.user_create(
                    username=form.cleaned_data["username"],
                    password=form.cleaned_data["password1"],
                    email=form.cleaned_data["email"],
                    confirmed=False,
                )
            except ValidationError as exc:
                form.add_error("username", exc.message_dict["username"])
            else:
                login(request, user, backend="django.contrib.auth.backends.ModelBackend")
                services.confirmation_send(user=user, base_url=request.build_absolute_uri("/"))
                messages.success(
                    request,
                    f"Welcome, {user.get_username()}. You are signed in. We sent a link to "
                    f"{user.email}: follow it to confirm your address before uploading.",
                )
                return redirect(next_url or "home")
    else:
        form = SignupForm()
    return render(request, "registration/signup.html", {"form": form, "next": next_url})


def email_confirm(request: HttpRequest, token: str) -> HttpResponse:
    try:
        user = services.email_confirm(token=token)
    except ValidationError as exc:
        return render(request, "accounts/confirm_failed.html", {"reason": exc.messages[0]}, status=400)
    messages.success(request, f"Your address {user.email} is confirmed; you can upload now.")
    return redirect("account-settings" if request.user.is_authenticated else "login")


@login_required
@require_POST
@throttled(SignupThrottle, what="confirmation e-mails")
def confirmation_resend(request: HttpRequest) -> HttpResponse:
    if services.email_confirmed(request.user):
        messages.info(request, "Your address is already confirmed.")
    else:
        services.confirmation_send(user=request.user, base_url=request.build_absolute_uri("/"))
        messages.success(request, f"A new confirmation link is on its way to {request.user.email}.")
    return redirect("account-settings")


class SettingsForm(forms.Form):
    notify_verdicts = forms.BooleanField(
        required=False,
        label="E-mail me when a verdict lands",
        help_text="One message per solution you submit (not per model-run attempt).",
    )


@login_required
def account_settings(request: HttpRequest) -> HttpResponse:
    row = AccountEmail.objects.filter(user=request.user).first()
    if request.method == "POST":
        form = SettingsForm(request.POST)
        if form.is_valid():
            services.notification_set(user=request.user, notify_verdicts=form.cleaned_data["notify_verdicts"])
            messages.success(
                request,
                "Verdict e-mails are on." if form.cleaned_data["notify_verdicts"] else "Verdict e-mails are off.",
            )
            return redirect("account-settings")
    else:
        form = SettingsForm(initial={"notify_verdicts": bool(row and row.notify_verdicts)})
    return render(
        request, "accounts/settings.html", {"form": form, "confirmed": services.email_confirmed(request.user)}
    )


@login_required
def token(request: HttpRequest) -> HttpResponse:
    return render(request, "accounts/token.html", {"token": Token.objects.filter(user=request.user).first()})


@login_required
@require_POST
def token_regenerate(request: HttpRequest) -> HttpResponse:
    had_one = Token.objects.filter(user=request.user).exists()
    services.token_regenerate(user=request.user)
    messages.success(
        request,
        "A new API token was created; the old one no longer works." if had_one else "Your API token was created.",
    )
    return redirect("account-token")


login_view = throttled(LoginThrottle, what="log-in attempts")(auth_views.LoginView.as_view())


def locked_out(request: HttpRequest, credentials: dict | None = None, *args, **kwargs) -> HttpResponse:
    """django-axes' answer to a log-in (the site's or the admin's) while its username is locked out from this
    address."""
    from django.conf import settings

    wait = settings.AXES_COOLOFF_TIME.total_seconds() if settings.AXES_COOLOFF_TIME else 3600
    response = too_many_requests(request, wait, "wrong passwords for this account")
    return response
