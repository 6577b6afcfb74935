"""Accounts (sign up, API token) and the API documentation page."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import UserCreationForm
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views import defaults
from django.views.decorators.http import require_POST
from drf_spectacular.generators import SchemaGenerator
from rest_framework.authtoken.models import Token

from portal import services
from portal.middleware import request_too_large


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


def api_docs(request: HttpRequest) -> HttpResponse:
    """A readable page generated from the OpenAPI schema (Swagger UI would need a CDN; this needs nothing)."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    components = schema.get("components", {}).get("schemas", {})
    operations = []
    for path, methods in schema.get("paths", {}).items():
        for method, op in methods.items():
            if method.lower() not in ("get", "post", "put", "patch", "delete"):
                continue
            body = []
            for content_type, content in (op.get("requestBody", {}).get("content") or {}).items():
                body.append({"content_type": content_type, "fields": _fields(content.get("schema", {}), components)})
            responses = []
            for code, response in (op.get("responses") or {}).items():
                content = (response.get("content") or {}).get("application/json", {})
                responses.append({"code": code, "description": response.get("description", ""),
                                  "fields": _fields(content.get("schema", {}), components)})
            operations.append({
                "method": method.upper(), "path": path, "id": op.get("operationId", ""),
                "description": op.get("description", ""), "parameters": op.get("parameters", []),
                "body": body, "responses": responses,
                "auth": [name for item in op.get("security", []) for name in item],
            })
    return render(request, "api/docs.html", {"info": schema.get("info", {}), "operations": operations})


def _fields(schema: dict, components: dict) -> list[dict]:
    if "$ref" in schema:
        schema = components.get(schema["$ref"].rsplit("/", 1)[-1], {})
    if schema.get("type") == "array":
        item = schema.get("items", {})
        return [{"name": "[ ]", "type": "array of", "description": "", "required": False}] + _fields(item, components)
    out = []
    required = set(schema.get("required", []))
    for name, prop in (schema.get("properties") or {}).items():
        kind = prop.get("type") or ("object" if "$ref" in prop else "")
        if "$ref" in prop:
            kind = prop["$ref"].rsplit("/", 1)[-1]
        elif kind == "array" and "$ref" in prop.get("items", {}):
            kind = "array of " + prop["items"]["$ref"].rsplit("/", 1)[-1]
        if prop.get("format"):
            kind += f" ({prop['format']})"
        if prop.get("nullable"):
            kind += ", nullable"
        out.append({"name": name, "type": kind, "description": prop.get("description", ""),
                    "required": name in required, "read_only": prop.get("readOnly", False)})
    return out


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler400: form data over DATA_UPLOAD_MAX_MEMORY_SIZE gets the same clear 413 as an oversized body."""
    if isinstance(exception, RequestDataTooBig):
        return request_too_large(request, limit=settings.DATA_UPLOAD_MAX_MEMORY_SIZE, what="form data")
    return defaults.bad_request(request, exception)
