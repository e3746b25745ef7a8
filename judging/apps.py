from django.apps import AppConfig


class JudgingConfig(AppConfig):
    name = "judging"
    verbose_name = "Judging: campaigns, rounds, pairs, HITs, judgments"
    default_auto_field = "django.db.models.BigAutoField"
