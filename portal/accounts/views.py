"""Accounts: sign up, and the API token page (log in and out are Django's own views, in ``urls``)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import UserCreationForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST
from rest_framework.authtoken.models import Token

from portal.accounts import services


def signup(request: HttpRequest) -> HttpResponse:
    next_url = request.POST.get("next") or request.GET.get("next") or ""
    if not url_has_allowed_host_and_scheme(next_url, allowed_hosts={request.get_host()},
                                           require_https=request.is_secure()):
        next_url = ""
    if request.user.is_authenticated:
        return redirect(next_url or "home")
    if request.method == "POST":
        form = UserCreationForm(request.POST)
        if form.is_valid():
            user = services.user_create(username=form.cleaned_data["username"],
                                        password=form.cleaned_data["password1"])
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            messages.success(request, f"Welcome, {user.get_username()}. You are signed in.")
            return redirect(next_url or "home")
    else:
        form = UserCreationForm()
    return render(request, "registration/signup.html", {"form": form, "next": next_url})


@login_required
def token(request: HttpRequest) -> HttpResponse:
    return render(request, "accounts/token.html", {"token": Token.objects.filter(user=request.user).first()})


@login_required
@require_POST
def token_regenerate(request: HttpRequest) -> HttpResponse:
    had_one = Token.objects.filter(user=request.user).exists()
    services.token_regenerate(user=request.user)
    messages.success(request, "A new API token was created; the old one no longer works." if had_one
                     else "Your API token was created.")
    return redirect("account-token")
