from django.conf import settings
from django.contrib import admin
from django.urls import include, path, re_path
from django.views.static import serve
from drf_spectacular.renderers import OpenApiJsonRenderer2
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from portal import site_docs, views

urlpatterns = [
    path("", include("leaderboard.web.urls")),
    path("", include("portal.contributions.urls")),  # /contribute/... and /api/proposals/...
    path("", include("portal.accounts.urls")),  # /accounts/...
    path("api/", include("leaderboard.web.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The same schema as application/json, which a browser shows instead of downloading (the site's links use it).
    path(
        "api/schema.json", SpectacularAPIView.as_view(renderer_classes=[OpenApiJsonRenderer2]), name="api-schema-json"
    ),
    path("api/docs/", views.api_docs, name="api-docs"),
    # Swagger UI from drf-spectacular-sidecar (no CDN; its script is a file of its own, so the CSP holds).
    path("api/swagger/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-swagger"),
    path("docs/", site_docs.site_doc_index, name="site-doc-index"),
    path("docs/backends/<slug:name>/", site_docs.backend_doc, name="site-backend-doc"),
    path("docs/<slug:name>/", site_docs.site_doc, name="site-doc"),
    path("admin/", admin.site.urls),
]

handler400 = "portal.views.bad_request"
handler404 = "portal.not_found.not_found"

if settings.SERVE_STATIC and not settings.DEBUG:
    # Small deployments without a web server in front: serve what `collectstatic` gathered.
    urlpatterns += [re_path(r"^static/(?P<path>.*)$", serve, {"document_root": settings.STATIC_ROOT})]
