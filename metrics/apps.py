from django.apps import AppConfig


class MetricsConfig(AppConfig):
    name = "metrics"
    verbose_name = "Metrics: ideal rankings, compatibility and other measures"
    default_auto_field = "django.db.models.BigAutoField"
