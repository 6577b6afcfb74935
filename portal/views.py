"""The site's own pages: the API documentation page and the handler for oversized form data (the missing page is
portal/not_found.py)."""

from __future__ import annotations


from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views import defaults
from drf_spectacular.generators import SchemaGenerator

from portal.middleware import request_too_large


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
                responses.append(
                    {
                        "code": code,
                        "description": response.get("description", ""),
                        "fields": _fields(content.get("schema", {}), components),
                    }
                )
            operations.append(
                {
                    "method": method.upper(),
                    "path": path,
                    "id": op.get("operationId", ""),
                    "description": op.get("description", ""),
                    "parameters": op.get("parameters", []),
                    "body": body,
                    "responses": responses,
                    "auth": [name for item in op.get("security", []) for name in item],
                }
            )
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
        out.append(
            {
                "name": name,
                "type": kind,
                "description": prop.get("description", ""),
                "required": name in required,
                "read_only": prop.get("readOnly", False),
            }
        )
    return out


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler400: form data over DATA_UPLOAD_MAX_MEMORY_SIZE gets the same clear 413 as an oversized body."""
    if isinstance(exception, RequestDataTooBig):
        return request_too_large(request, limit=settings.DATA_UPLOAD_MAX_MEMORY_SIZE, what="form data")
    return defaults.bad_request(request, exception)
