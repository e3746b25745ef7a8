"""Admin for the pools app. Passage text is shown as plain (escaped) text: it comes from outside files."""

from django.contrib import admin
from django.db.models import Count, QuerySet
from django.http import HttpRequest
from django.utils.text import Truncator

from pools import selectors, services
from pools.models import Collection, GradedJudgment, Item, Run, Topic

PREVIEW_CHARACTERS = 120


@admin.register(Collection)
class CollectionAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "is_strict",
        "topic_count",
        "item_count",
        "judgment_count",
        "run_count",
        "created_at",
    ]
    list_filter = ["is_strict"]
    search_fields = ["name", "description"]
    readonly_fields = ["created_at"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Collection]:
        return (
            super()
            .get_queryset(request)
            .annotate(
                topic_total=selectors.rows_per_collection(Topic.objects.all()),
                item_total=selectors.rows_per_collection(Item.objects.all()),
                run_total=selectors.rows_per_collection(Run.objects.all()),
                judgment_total=selectors.rows_per_collection(
                    GradedJudgment.objects.all(), collection_field="topic__collection"
                ),
            )
        )

    def delete_model(self, request: HttpRequest, collection: Collection) -> None:
        services.collection_delete(collection=collection)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Collection]) -> None:
        for collection in queryset:
            services.collection_delete(collection=collection)

    @admin.display(description="topics", ordering="topic_total")
    def topic_count(self, collection: Collection) -> int:
        return collection.topic_total

    @admin.display(description="items", ordering="item_total")
    def item_count(self, collection: Collection) -> int:
        return collection.item_total

    @admin.display(description="graded judgments", ordering="judgment_total")
    def judgment_count(self, collection: Collection) -> int:
        return collection.judgment_total

    @admin.display(description="runs", ordering="run_total")
    def run_count(self, collection: Collection) -> int:
        return collection.run_total


@admin.register(Topic)
class TopicAdmin(admin.ModelAdmin):
    list_display = ["topic_id", "collection", "question_preview", "conversation_id", "turn", "judgment_count"]
    list_filter = ["collection"]
    search_fields = ["topic_id", "question", "utterance"]
    list_select_related = ["collection"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Topic]:
        return super().get_queryset(request).annotate(judgment_total=Count("graded_judgments"))

    @admin.display(description="question")
    def question_preview(self, topic: Topic) -> str:
        return Truncator(topic.question).chars(PREVIEW_CHARACTERS)

    @admin.display(description="graded judgments", ordering="judgment_total")
    def judgment_count(self, topic: Topic) -> int:
        return topic.judgment_total


@admin.register(Item)
class ItemAdmin(admin.ModelAdmin):
    list_display = ["docid", "collection", "text_preview"]
    list_filter = ["collection"]
    search_fields = ["docid"]
    list_select_related = ["collection"]
    show_full_result_count = False

    @admin.display(description="passage")
    def text_preview(self, item: Item) -> str:
        # A plain str is escaped by the admin; never mark passage text safe.
        return Truncator(item.text).chars(PREVIEW_CHARACTERS) if item.text else "(no text imported)"


@admin.register(GradedJudgment)
class GradedJudgmentAdmin(admin.ModelAdmin):
    list_display = ["topic", "item", "grade", "collection"]
    list_filter = ["topic__collection", "grade"]
    search_fields = ["topic__topic_id", "item__docid"]
    list_select_related = ["topic__collection", "item"]
    raw_id_fields = ["topic", "item"]
    show_full_result_count = False

    @admin.display(description="collection", ordering="topic__collection__name")
    def collection(self, judgment: GradedJudgment) -> Collection:
        return judgment.topic.collection


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["name", "collection", "line_count", "topic_count", "file", "created_at"]
    list_filter = ["collection"]
    search_fields = ["name"]
    list_select_related = ["collection"]
    # The file and its counts change only through the run importer, which validates the file.
    readonly_fields = ["file", "line_count", "topic_count", "created_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        # An upload here would skip validation; runs come in through `toppref import run`.
        return False

    def delete_model(self, request: HttpRequest, run: Run) -> None:
        services.run_delete(run=run)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Run]) -> None:
        for run in queryset:
            services.run_delete(run=run)
