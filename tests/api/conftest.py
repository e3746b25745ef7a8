"""Fixtures of the researchers' side (API and dashboard): users in each role and a finished demo campaign."""

from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from judging.engine import PerfectOracle
from judging.services import campaign_create, campaign_start
from judging.services.simulated_crowd import campaign_simulate
from metrics.leaderboard import campaign_runs_score
from pools.services import demo_load
from pools.trec import read_qrels

DEMO_DIR = Path(__file__).resolve().parents[2] / "demo"


def _user(username: str, group: str | None = None, **extra) -> User:
    user = User.objects.create_user(username=username, password="pw-" + username, **extra)
    if group:
        Group.objects.get_or_create(name=group)[0].user_set.add(user)
    return user


@pytest.fixture
def researcher(db):
    return _user("alice", "researchers")


@pytest.fixture
def other_researcher(db):
    return _user("bob", "researchers")


@pytest.fixture
def assessor(db):
    return _user("carol", "assessors")


@pytest.fixture
def crowd_user(db):
    return _user("dave", "crowd")


@pytest.fixture
def staff(db):
    return _user("erin", is_staff=True)


def token_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


@pytest.fixture
def api(researcher):
    return token_client(researcher)


@pytest.fixture
def outsiders(other_researcher, assessor, crowd_user):
    """Clients that must get nothing from a campaign of ``researcher``: another researcher gets 404, an
    assessor and a crowd user 403."""
    return [
        (token_client(other_researcher), 404),
        (token_client(assessor), 403),
        (token_client(crowd_user), 403),
    ]


@pytest.fixture
def demo_collection(db, settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    return demo_load(directory=DEMO_DIR).collection


@pytest.fixture
def draft_campaign(demo_collection, researcher):
    return campaign_create(collection=demo_collection, name="demo-draft", seed=3, owner=researcher)


@pytest.fixture
def finished_campaign(demo_collection, researcher, django_capture_on_commit_callbacks):
    """Two topics of the demo collection (one of them through stage-1 rounds) judged to the end by a perfect crowd (the others keep their grades
    in the preference qrels), its four runs scored for the leaderboard."""
    with django_capture_on_commit_callbacks(execute=True):
        campaign = campaign_create(collection=demo_collection, name="demo-done", seed=3, owner=researcher)
        campaign = campaign_start(campaign=campaign, topic_ids=["c1_1", "d11"])
    with django_capture_on_commit_callbacks(execute=True):
        campaign_simulate(
            campaign=campaign, oracle=PerfectOracle(read_qrels(DEMO_DIR / "qrels.preference.txt"))
        )
    campaign.refresh_from_db()
    assert campaign.status == "done"
    campaign_runs_score(campaign=campaign)
    return campaign
