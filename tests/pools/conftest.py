from pathlib import Path

import pytest

from pools.models import Collection, GradedJudgment, Item, Run, Topic


@pytest.fixture
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    return Path(settings.MEDIA_ROOT)


@pytest.fixture
def pools_state(media_root):
    """A snapshot of every pools table (row counts and contents) and of the files under MEDIA_ROOT, to show
    that a refused import changed nothing."""

    def snapshot() -> dict:
        tables = {
            "collections": Collection.objects.order_by("pk").values_list(
                "pk", "name", "description", "is_strict"
            ),
            "topics": Topic.objects.order_by("pk").values_list(
                "pk", "collection_id", "topic_id", "question", "conversation_id", "turn", "utterance"
            ),
            "items": Item.objects.order_by("pk").values_list("pk", "collection_id", "docid", "text"),
            "graded_judgments": GradedJudgment.objects.order_by("pk").values_list(
                "pk", "topic_id", "item_id", "grade"
            ),
            "runs": Run.objects.order_by("pk").values_list(
                "pk", "collection_id", "name", "file", "line_count", "topic_count"
            ),
        }
        state = {name: list(rows) for name, rows in tables.items()}
        state["row_counts"] = {name: len(rows) for name, rows in state.items()}
        state["media_files"] = sorted(
            str(path.relative_to(media_root)) for path in media_root.rglob("*") if path.is_file()
        )
        return state

    return snapshot
