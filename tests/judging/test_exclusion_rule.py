"""The exclusion rule has one definition (judging/selectors/exclusions.py): the services' checks
(``worker_is_excluded``, ``worker_exclusion_scope``), the pair page's read of the held assignment
(``assignment_held``) and the campaign pages' filter (``worker_excluded_here``, ``worker_list_excluded_for``)
agree on every case of it."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from judging.models import Assignment, Worker, WorkerExclusion
from judging.selectors import assignment_held
from judging.selectors.workers import worker_excluded_here
from judging.services import (
    WorkerExcludedError,
    campaign_create,
    campaign_start,
    hit_assign_next,
    hit_build,
    worker_for_user,
)
from judging.services.exclusions import (
    worker_exclusion_scope,
    worker_is_excluded,
    worker_list_excluded_for,
)
from tests.judging.factories import collection_with_grades, graded_pool

CASES = {
    # case: (the campaign has an owner, global exclusion, excluded by the campaign's owner, by another owner)
    "not excluded": (True, False, False, False),
    "excluded globally": (True, True, False, False),
    "excluded by the campaign's owner": (True, False, True, False),
    "excluded by another owner only": (True, False, False, True),
    "excluded by both owners": (True, False, True, True),
    "no owner, excluded by an owner": (False, False, False, True),
    "no owner, excluded globally": (False, True, False, True),
}


@pytest.mark.django_db
@pytest.mark.parametrize("case", CASES)
def test_every_spelling_of_the_exclusion_rule_agrees(case):
    has_owner, is_global, by_owner, by_other = CASES[case]
    # Given a judge holding an assignment in a running local crowd campaign
    owner = User.objects.create_user("owner")
    other = User.objects.create_user("other")
    judge = User.objects.create_user("judge")
    collection = collection_with_grades({"1_1": graded_pool("a", 9)})
    campaign = campaign_start(
        campaign=campaign_create(collection=collection, name="c", seed=1, owner=owner if has_owner else None)
    )
    hit_build(campaign=campaign)
    worker = worker_for_user(user=judge)
    held = hit_assign_next(campaign=campaign, worker=worker)
    assert held is not None and held.status == Assignment.Status.IN_PROGRESS
    # When the worker is excluded as the case says
    Worker.objects.filter(pk=worker.pk).update(is_excluded=is_global)
    for excluder, applies in ((owner, by_owner), (other, by_other)):
        if applies:
            WorkerExclusion.objects.create(worker=worker, owner=excluder, campaign=campaign, reason="test")
    worker.refresh_from_db()

    # Then every spelling of the rule gives the same answer
    expected = is_global or (has_owner and by_owner)
    assert worker_is_excluded(worker=worker, campaign=campaign) is expected
    assert (assignment_held(user=judge, now=timezone.now()) is None) is expected
    assert Worker.objects.filter(worker_excluded_here(campaign=campaign), pk=worker.pk).exists() is expected
    assert (worker in worker_list_excluded_for(campaign=campaign)) is expected
    assert worker_exclusion_scope(worker=worker, campaign=campaign) == (
        None if not expected else "global" if is_global else "owner"
    )
    # And with the worker not excluded the page shows the assignment it holds
    if not expected:
        assert assignment_held(user=judge, now=timezone.now()) == held


@pytest.mark.django_db
@pytest.mark.parametrize("hit_free", [True, False], ids=["a HIT free", "no HIT free"])
@pytest.mark.parametrize("case", CASES)
def test_taking_a_hit_without_one_held_follows_the_rule(case, hit_free):
    has_owner, is_global, by_owner, by_other = CASES[case]
    # Given a judge who holds no assignment in a running local crowd campaign, with or without a HIT to take
    owner = User.objects.create_user("owner")
    other = User.objects.create_user("other")
    collection = collection_with_grades({"1_1": graded_pool("a", 9)})
    campaign = campaign_start(
        campaign=campaign_create(collection=collection, name="c", seed=1, owner=owner if has_owner else None)
    )
    hits = hit_build(campaign=campaign)
    if not hit_free:
        for number in range(len(hits)):
            taker = worker_for_user(user=User.objects.create_user(f"taker-{number}"))
            assert hit_assign_next(campaign=campaign, worker=taker) is not None
    worker = worker_for_user(user=User.objects.create_user("judge"))
    # When the worker is excluded as the case says
    Worker.objects.filter(pk=worker.pk).update(is_excluded=is_global)
    for excluder, applies in ((owner, by_owner), (other, by_other)):
        if applies:
            WorkerExclusion.objects.create(worker=worker, owner=excluder, campaign=campaign, reason="test")

    # Then taking a HIT refuses them exactly when the rule excludes them, and otherwise hands out the free HIT
    expected = is_global or (has_owner and by_owner)
    if expected:
        with pytest.raises(WorkerExcludedError):
            hit_assign_next(campaign=campaign, worker=worker)
        assert not Assignment.objects.filter(worker=worker).exists()
    else:
        taken = hit_assign_next(campaign=campaign, worker=worker)
        assert (taken is not None) is hit_free
