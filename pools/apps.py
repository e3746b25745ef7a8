from django.apps import AppConfig


class PoolsConfig(AppConfig):
    name = "pools"
    verbose_name = "Pools: topics, passages, graded judgments, runs"
    default_auto_field = "django.db.models.BigAutoField"
