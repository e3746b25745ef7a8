"""Admin of stored scores: read-only (scores are written by ``metrics.services`` only)."""

from django.contrib import admin

from metrics.models import RunScore, TopicScore


class TopicScoreInline(admin.TabularInline):
    model = TopicScore
    fields = ("topic", "value")
    readonly_fields = fields
    can_delete = False
    extra = 0

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(RunScore)
class RunScoreAdmin(admin.ModelAdmin):
    list_display = ("run", "measure", "campaign", "qrels_kind", "mean", "topic_count", "computed_at")
    list_filter = ("measure", "qrels_kind", "run__collection")
    search_fields = ("run__name", "measure")
    readonly_fields = ("run", "campaign", "qrels_kind", "measure", "mean", "topic_count", "computed_at")
    inlines = [TopicScoreInline]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
