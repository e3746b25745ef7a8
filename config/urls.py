from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path
from django.utils.functional import lazy
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from judging.views.accounts import LoginView

# Nothing user-uploaded is served from a public path: run files and exports go only through views that
# check the campaign's owner (dashboard and API), never a /media/ URL.
urlpatterns = [
    path("", include("dashboard.urls")),
    path("", include("pools.urls")),
    # Browsers ask for /favicon.ico on a first visit whatever the page links; the icon is a static SVG.
    path("favicon.ico", RedirectView.as_view(url=lazy(static, str)("favicon.svg"), permanent=True)),
    path("accounts/login/", LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", include("judging.urls")),
    path("admin/", admin.site.urls),
    # Researchers: the REST API (pools + judging + metrics), documented at /api/docs/.
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/", include("pools.api_urls")),
    path("api/", include("judging.api_urls")),
    path("api/", include("metrics.api_urls")),
]
