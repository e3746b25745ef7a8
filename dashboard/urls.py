"""The dashboard's URLs: the site's front page (it shows campaigns and scores, so it lives in the top layer) and
the researchers' pages under /dashboard/ (namespace ``dashboard``)."""

from django.urls import include, path

from dashboard import views

researcher_patterns = [
    path("", views.campaign_list, name="campaigns"),
    path("campaigns/new/", views.campaign_new, name="campaign-new"),
    path("campaigns/<slug:name>/", views.campaign_detail, name="campaign"),
    path("campaigns/<slug:name>/progress.json", views.campaign_progress_json, name="campaign-progress"),
    path("campaigns/<slug:name>/action/", views.campaign_action, name="campaign-action"),
    path("campaigns/<slug:name>/exports/", views.campaign_export, name="campaign-export"),
    path("campaigns/<slug:name>/runs/", views.run_upload_view, name="campaign-run-upload"),
    path("campaigns/<slug:name>/workers/", views.campaign_workers, name="campaign-workers"),
    path("campaigns/<slug:name>/leaderboard/", views.campaign_leaderboard_view, name="campaign-leaderboard"),
    path(
        "campaigns/<slug:name>/leaderboard.csv",
        views.campaign_leaderboard_csv,
        name="campaign-leaderboard-csv",
    ),
    path("campaigns/<slug:name>/plots/<str:figure>.png", views.campaign_plot, name="campaign-plot"),
    path(
        "campaigns/<slug:name>/plots/<str:figure>.svg",
        views.campaign_plot,
        {"format": "svg"},
        name="campaign-plot-svg",
    ),
    path("exports/<int:export_id>/download/", views.export_download, name="export-download"),
]
urlpatterns = [
    path("", views.home, name="home"),
    path("dashboard/", include((researcher_patterns, "dashboard"))),
]
