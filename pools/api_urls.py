"""Routes of the pools app's API under /api/ (see config/urls.py): collections."""

from django.urls import path

from pools import api

urlpatterns = [
    path("collections/", api.CollectionListApi.as_view(), name="api-collections"),
    path(
        "collections/<slug:name>/topics/",
        api.CollectionFileImportApi.as_view(kind="topics"),
        name="api-collection-topics",
    ),
    path(
        "collections/<slug:name>/passages/",
        api.CollectionFileImportApi.as_view(kind="passages"),
        name="api-collection-passages",
    ),
    path(
        "collections/<slug:name>/qrels/",
        api.CollectionFileImportApi.as_view(kind="qrels"),
        name="api-collection-qrels",
    ),
]
