"""The planner's ceiling in seconds: a plan within the work bound that still cannot be made within
``TOPPREF_PLAN_MAX_SECONDS`` is refused with the bound named, instead of holding a web worker until gunicorn
kills it."""

import pytest


@pytest.mark.django_db
def test_a_plan_past_its_time_bound_is_refused_naming_the_bound(api, settings):
    # given a planner bound far below what the plan needs (the plan needs about 46 s of CPU; this one
    # needs a few seconds, against a bound of a few milliseconds)
    settings.TOPPREF_PLAN_MAX_SECONDS = 0.005
    body = {"pool_size": 10, "k": 5, "P": 7, "F": 9, "trials": 2000}

    # when the plan is asked for
    response = api.post("/api/plan/", body, format="json")

    # then it is refused, naming the bound and saying how many trials would fit
    assert response.status_code == 400, response.json()
    [message] = response.json()["non_field_errors"]
    assert "TOPPREF_PLAN_MAX_SECONDS" in message and "needs more than 0.005 s" in message
    assert "of its 2000 trials" in message


@pytest.mark.django_db
def test_a_plan_within_its_time_bound_answers(api, settings):
    settings.TOPPREF_PLAN_MAX_SECONDS = 60
    response = api.post("/api/plan/", {"pool_size": 10, "trials": 3}, format="json")
    assert response.status_code == 200 and response.json()["trials"] == 3
