"""Prepared statements: built and compiled once, run with each call's values, giving what the ORM gives."""

from datetime import timedelta

import pytest
from django.db import DatabaseError, connection
from django.db.models import F
from django.utils import timezone

from judging.models import Campaign, Worker
from judging.services.prepared import (
    instance_update,
    instance_update_write,
    prepared_objects,
    prepared_rows,
    prepared_update,
    prepared_update_write,
    rows_insert,
    rows_insert_writes,
    writes_run,
)
from tests.judging.factories import CampaignFactory, WorkerFactory


def workers_from(*, first_id: int):
    return (
        Worker.objects.filter(pk__gte=first_id).order_by("pk").values_list("pk", "is_excluded", "created_at")
    )


@pytest.mark.django_db
def test_each_call_runs_with_its_own_values_and_rows_convert_as_the_orm_converts_them():
    # Given three workers
    workers = WorkerFactory.create_batch(3)

    # When one prepared statement runs with two different values
    from_first = prepared_rows("test: workers from", workers_from, first_id=workers[0].pk)
    from_last = prepared_rows("test: workers from", workers_from, first_id=workers[2].pk)

    # Then each gives the ORM's rows for its own value (booleans and datetimes converted)
    assert from_first == list(workers_from(first_id=workers[0].pk))
    assert from_last == list(workers_from(first_id=workers[2].pk))
    assert [pk for pk, *_ in from_last] == [workers[2].pk]
    assert from_first[0][1] is False and from_first[0][2].tzinfo is not None


@pytest.mark.django_db
def test_objects_come_with_their_related_objects_and_annotations():
    # Given a campaign
    campaign = CampaignFactory()

    # When it is read through a prepared statement with its collection and an annotation
    [found] = prepared_objects(
        "test: campaign with collection",
        lambda *, pk: (
            Campaign.objects.select_related("collection").filter(pk=pk).annotate(twice=F("seed") * 2)
        ),
        pk=campaign.pk,
    )

    # Then it is the ORM's instance, its collection loaded without another query
    assert (found.pk, found.name, found.seed, found.hit_lifetime) == (
        campaign.pk,
        campaign.name,
        campaign.seed,
        Campaign.objects.get(pk=campaign.pk).hit_lifetime,
    )
    assert found.twice == 2 * campaign.seed
    assert Campaign.collection.is_cached(found)
    assert found.collection.pk == campaign.collection_id


@pytest.mark.django_db
def test_an_update_changes_the_rows_of_its_own_values():
    # Given three workers
    workers = WorkerFactory.create_batch(3)
    now = timezone.now()

    # When two of them are excluded through a prepared update, then the third
    def exclude(*, pks, at):
        return Worker.objects.filter(pk__in=pks), {"is_excluded": True, "excluded_at": at}

    changed = prepared_update("test: exclude", exclude, pks=[workers[0].pk, workers[1].pk], at=now)
    later = now + timedelta(seconds=5)
    changed_again = prepared_update("test: exclude", exclude, pks=[workers[2].pk, workers[2].pk], at=later)

    # Then each call changed its own rows with its own values
    assert (changed, changed_again) == (2, 1)
    assert list(Worker.objects.order_by("pk").values_list("is_excluded", "excluded_at")) == [
        (True, now),
        (True, now),
        (True, later),
    ]


@pytest.mark.django_db
def test_a_value_the_orm_writes_into_the_sql_text_is_refused():
    # Given a builder whose value becomes the LIMIT, written into the SQL rather than bound
    def first_workers(*, n):
        return Worker.objects.order_by("pk").values_list("pk")[:n]

    # When it is prepared, then it is refused (it would run with the first call's value forever)
    with pytest.raises(ValueError, match="not bound as parameters"):
        prepared_rows("test: first workers", first_workers, n=2)


@pytest.mark.django_db
def test_an_empty_sequence_runs_no_statement(django_assert_num_queries):
    # Given a statement over a list of ids, when the list is empty
    with django_assert_num_queries(0):
        rows = prepared_rows(
            "test: workers in", lambda *, pks: Worker.objects.filter(pk__in=pks).values_list("pk"), pks=[]
        )

    # Then nothing is found, as the ORM finds nothing without asking the database
    assert rows == []


@pytest.mark.django_db
def test_an_instance_update_stores_the_fields_as_save_does_and_refuses_a_row_that_is_gone():
    # Given a worker excluded in memory, and another deleted meanwhile
    worker, gone = WorkerFactory.create_batch(2)
    worker.is_excluded, worker.excluded_at, worker.exclusion_reason = True, timezone.now(), "failed"
    Worker.objects.filter(pk=gone.pk).delete()

    # When the fields are stored, then they read back as saved, and the other worker is untouched
    instance_update(worker, ["is_excluded", "excluded_at", "exclusion_reason"])
    stored = Worker.objects.get(pk=worker.pk)
    assert (stored.is_excluded, stored.excluded_at, stored.exclusion_reason) == (
        True,
        worker.excluded_at,
        "failed",
    )

    # And the row that is gone is an error, as for save(update_fields=...)
    with pytest.raises(DatabaseError):
        instance_update(gone, ["is_excluded"])


@pytest.mark.django_db
def test_rows_insert_stores_what_bulk_create_stores_for_instances_of_the_same_values():
    # Given two workers' values, one written by bulk_create from instances, the other as a row
    before = timezone.now()
    (made,) = Worker.objects.bulk_create([Worker(provider="simulated", external_id="as-instance")])
    rows_insert(Worker, ("provider", "external_id"), [("simulated", "as-row"), ("simulated", "as-row-2")])

    # Then every field but the id, the external id and the time of creation reads back the same
    fields = [f.attname for f in Worker._meta.concrete_fields if f.attname not in ("id", "external_id")]
    stored = {
        worker.external_id: worker
        for worker in Worker.objects.filter(external_id__in=["as-instance", "as-row", "as-row-2"])
    }
    assert set(stored) == {"as-instance", "as-row", "as-row-2"}
    for name in ("as-row", "as-row-2"):
        for field in fields:
            if field == "created_at":
                assert stored[name].created_at >= before
            else:
                assert getattr(stored[name], field) == getattr(stored["as-instance"], field), field
    assert made.pk == stored["as-instance"].pk


@pytest.mark.django_db
def test_rows_insert_refuses_a_field_the_model_does_not_have():
    with pytest.raises(ValueError, match="no field"):
        rows_insert(Worker, ("provider", "nickname"), [("simulated", "x")])


@pytest.mark.django_db
def test_writes_run_together_store_what_each_stores_alone(django_assert_num_queries):
    # Given a worker excluded in memory, a campaign to rename and two workers' rows to insert
    worker = WorkerFactory()
    worker.is_excluded, worker.exclusion_reason = True, "failed"
    campaign = CampaignFactory(name="before")
    writes = [
        *rows_insert_writes(
            Worker, ("provider", "external_id"), [("simulated", "w-1"), ("simulated", "w-2")]
        ),
        instance_update_write(worker, ["is_excluded", "exclusion_reason"]),
        prepared_update_write(
            "test: rename",
            lambda *, pk: (Campaign.objects.filter(pk=pk), {"name": "after"}),
            pk=campaign.pk,
        ),
    ]

    # When they run: on PostgreSQL as one statement, elsewhere one by one
    with django_assert_num_queries(1 if connection.vendor == "postgresql" else 3):
        writes_run(writes)

    # Then each stored what it stores alone
    assert Worker.objects.filter(external_id__in=["w-1", "w-2"]).count() == 2
    stored = Worker.objects.get(pk=worker.pk)
    assert (stored.is_excluded, stored.exclusion_reason) == (True, "failed")
    assert Campaign.objects.get(pk=campaign.pk).name == "after"


@pytest.mark.django_db
def test_writes_run_together_refuse_an_instance_whose_row_is_gone():
    # Given a worker deleted meanwhile, written with another worker's insert
    gone = WorkerFactory()
    Worker.objects.filter(pk=gone.pk).delete()
    writes = [
        *rows_insert_writes(Worker, ("provider", "external_id"), [("simulated", "w-3")]),
        instance_update_write(gone, ["is_excluded"]),
    ]

    # Then the update of the row that is gone is an error, as for save(update_fields=...)
    with pytest.raises(DatabaseError, match="changed no row"):
        writes_run(writes)
