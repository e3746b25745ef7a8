"""The dashboard's forecast is planned in the background (the sweep, celery beat), stored with its time and
shown with its age; a page never runs the planner (issue 18: it ran a Monte-Carlo simulation on a cache miss)."""

from unittest import mock

import pytest

from judging.models import CampaignForecast
from judging.services import campaign_create, campaign_start
from judging.services.planning import campaign_forecast_running, campaign_open_pools

pytestmark = pytest.mark.django_db


@pytest.fixture
def running_campaign(demo_collection, researcher, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        campaign = campaign_create(collection=demo_collection, name="demo-running", seed=3, owner=researcher)
        return campaign_start(campaign=campaign, topic_ids=["c1_1", "d11"])


def test_the_page_never_plans_and_shows_the_stored_forecast_with_its_age(
    client, researcher, running_campaign
):
    client.force_login(researcher)
    with mock.patch(
        "judging.engine.planning.plan_campaign", side_effect=AssertionError("planned in a request")
    ):
        page = client.get("/dashboard/campaigns/demo-running/").content.decode()
    assert "not planned yet" in page and not CampaignForecast.objects.exists()

    # the background plans the open pools once...
    assert campaign_open_pools(campaign=running_campaign)
    assert campaign_forecast_running() == 1
    forecast = CampaignForecast.objects.get(campaign=running_campaign)
    assert forecast.hits > 0 and forecast.cost_usd > 0
    # ...and not again while the pools are the same
    with mock.patch("judging.services.planning.plan_campaign", side_effect=AssertionError("planned twice")):
        campaign_forecast_running()
    page = client.get("/dashboard/campaigns/demo-running/").content.decode()
    assert f"${forecast.cost_usd:.2f}" in page and "ago)" in page


def test_an_adaptive_campaign_is_forecast_by_the_adaptive_planner(
    researcher, demo_collection, django_capture_on_commit_callbacks
):
    import random

    from judging.engine.planning import plan_adaptive
    from judging.services.planning import FORECAST_TRIALS, campaign_settings, forecast_error_rate
    from judging.services.topic_state import adaptive_params

    with django_capture_on_commit_callbacks(execute=True):
        campaign = campaign_create(
            collection=demo_collection, name="demo-adaptive", mode="adaptive", seed=5, owner=researcher
        )
        campaign = campaign_start(campaign=campaign, topic_ids=["c1_1", "d11"])
    pools = campaign_open_pools(campaign=campaign)
    assert pools
    assert campaign_forecast_running() == 1
    forecast = CampaignForecast.objects.get(campaign=campaign)
    _, hit_shape, pricing = campaign_settings(campaign=campaign)
    expected = plan_adaptive(
        pools,
        params=adaptive_params(campaign),
        trials=FORECAST_TRIALS,
        rng=random.Random(campaign.seed),
        hit_shape=hit_shape,
        pricing=pricing,
        error_rate=forecast_error_rate(campaign=campaign),
    )
    assert forecast.hits == pytest.approx(expected["hits"]) and forecast.hits > 0
    assert float(forecast.cost_usd) == pytest.approx(expected["cost_usd"], abs=0.005)
