"""Admin for the judging app. Campaign parameters are editable while the campaign is a draft; everything that
the state machine owns (topic states, rounds, pairs, HITs, assignments, judgments) is read-only here, because
it may only change through the services (which keep the locks and invariants)."""

from django.contrib import admin
from django.db.models import Count, QuerySet
from django.http import HttpRequest

from judging.models import (
    Assignment,
    Campaign,
    CampaignTopic,
    Candidate,
    Hit,
    HitSlot,
    Judgment,
    Pair,
    Round,
    TournamentJudgment,
    Worker,
)


class ReadOnlyAdmin(admin.ModelAdmin):
    """Browse only: no add, change or delete from the admin."""

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(Campaign)
class CampaignAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "collection",
        "mode",
        "status",
        "k",
        "final_stage_size",
        "opponents",
        "culling",
        "topic_count",
        "created_at",
    ]
    list_filter = ["mode", "status", "culling"]
    search_fields = ["name", "description"]
    readonly_fields = ["status", "created_at", "started_at", "finished_at"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Campaign]:
        return (
            super()
            .get_queryset(request)
            .select_related("collection")
            .annotate(topic_count=Count("campaign_topics"))
        )

    @admin.display(ordering="topic_count")
    def topic_count(self, campaign: Campaign) -> int:
        return campaign.topic_count

    def get_readonly_fields(self, request: HttpRequest, obj: Campaign | None = None):
        # Parameters of a started campaign are part of its results: frozen.
        if obj is not None and obj.status != Campaign.Status.DRAFT:
            return [field.name for field in Campaign._meta.fields]
        return self.readonly_fields

    def has_delete_permission(self, request: HttpRequest, obj: Campaign | None = None) -> bool:
        return obj is None or obj.status == Campaign.Status.DRAFT


class CandidateInline(admin.TabularInline):
    model = Candidate
    fields = ["position", "item", "grade", "is_active", "culled_in_round", "rank", "wins"]
    readonly_fields = fields
    can_delete = False
    extra = 0

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(CampaignTopic)
class CampaignTopicAdmin(ReadOnlyAdmin):
    list_display = ["campaign", "topic", "state", "round_number", "assessor", "updated_at"]
    list_select_related = ["campaign", "topic", "assessor"]  # the assessor is nullable: not joined by default
    list_filter = ["state", "campaign"]
    search_fields = ["topic__topic_id"]
    inlines = [CandidateInline]


@admin.register(Round)
class RoundAdmin(ReadOnlyAdmin):
    list_display = ["campaign_topic", "number", "stage", "candidate_count", "created_at", "closed_at"]
    list_filter = ["stage", "campaign_topic__campaign"]


@admin.register(Pair)
class PairAdmin(ReadOnlyAdmin):
    list_display = ["round", "left", "right", "hit", "winner", "judged_at"]
    list_select_related = ["round__campaign_topic__topic", "left", "right", "hit__campaign", "winner"]
    raw_id_fields = ["round", "left", "right", "hit", "winner"]


class HitSlotInline(admin.TabularInline):
    model = HitSlot
    fields = ["position", "topic", "pair", "left", "right", "is_challenge", "expected_winner"]
    readonly_fields = fields
    can_delete = False
    extra = 0

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(Hit)
class HitAdmin(ReadOnlyAdmin):
    list_display = [
        "campaign",
        "number",
        "status",
        "provider",
        "external_id",
        "created_at",
        "expires_at",
        "closed_at",
    ]
    list_filter = ["status", "provider", "campaign"]
    inlines = [HitSlotInline]


@admin.register(Worker)
class WorkerAdmin(ReadOnlyAdmin):
    list_display = ["provider", "external_id", "is_excluded", "excluded_at", "exclusion_reason", "created_at"]
    list_filter = ["provider", "is_excluded"]
    search_fields = ["external_id"]


@admin.register(Assignment)
class AssignmentAdmin(ReadOnlyAdmin):
    list_display = ["hit", "worker", "status", "earned_usd", "paid_usd", "started_at", "submitted_at"]
    list_filter = ["status"]
    raw_id_fields = ["hit", "worker"]


@admin.register(Judgment)
class JudgmentAdmin(ReadOnlyAdmin):
    list_display = ["assignment", "slot", "winner", "shown_at", "created_at"]
    raw_id_fields = ["assignment", "slot", "winner"]


@admin.register(TournamentJudgment)
class TournamentJudgmentAdmin(ReadOnlyAdmin):
    list_display = ["campaign_topic", "assessor", "left", "right", "winner", "created_at"]
    list_filter = ["campaign_topic__campaign"]
    raw_id_fields = ["campaign_topic", "left", "right", "winner"]
