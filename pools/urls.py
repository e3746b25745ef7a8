from django.urls import path

from pools import views

app_name = "pools"
urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
]
