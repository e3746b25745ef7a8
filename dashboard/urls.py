"""The site's front page (it shows campaigns and scores, so it lives in the top layer)."""

from django.urls import path

from dashboard import views

urlpatterns = [path("", views.home, name="home")]
