from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from pools import selectors


def home(request: HttpRequest) -> HttpResponse:
    return render(request, "pools/home.html", {"collections": selectors.collection_list_with_counts()})


def healthz(request: HttpRequest) -> JsonResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok", "database": connection.vendor})
