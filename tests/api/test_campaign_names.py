"""Campaign names are unique per owner, not globally, and a name means the caller's own campaign: no answer
tells one researcher another's campaign names (the probe: bob's POST of alice's "a-mturk" answered "campaign
with this name already exists" where his GET of it answered 404). Staff may name the owner."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from judging.models import Campaign
from judging.services import campaign_create
from tests.api.conftest import token_client

pytestmark = pytest.mark.django_db


def _create(client, name: str):
    return client.post(
        "/api/campaigns/",
        {"name": name, "collection": "demo", "k": 2, "final_stage_size": 4, "opponents": 3},
        format="json",
    )


@pytest.fixture
def alices(demo_collection, researcher):
    return campaign_create(collection=demo_collection, name="a-mturk", owner=researcher, seed=1)


def test_a_name_another_owner_uses_is_free_and_resolves_to_the_callers_own(alices, other_researcher):
    bob = token_client(other_researcher)
    # given alice's "a-mturk", bob cannot see it
    assert bob.get("/api/campaigns/a-mturk/").status_code == 404
    # when bob creates his own "a-mturk"
    created = _create(bob, "a-mturk")
    # then it is created, and his GET of the name is his campaign; alice's is hers
    assert created.status_code == 201, created.content
    assert created.json()["owner"] == "bob"
    assert bob.get("/api/campaigns/a-mturk/").json()["owner"] == "bob"
    assert token_client(alices.owner).get("/api/campaigns/a-mturk/").json()["owner"] == "alice"
    assert bob.post("/api/campaigns/a-mturk/pause/").status_code == 409  # his draft, not alice's
    assert [row["owner"] for row in bob.get("/api/campaigns/").json()["results"]] == ["bob"]
    assert Campaign.objects.filter(name="a-mturk").count() == 2


def test_a_name_of_ones_own_is_refused_naming_only_ones_own(alices, researcher):
    response = _create(token_client(researcher), "a-mturk")

    assert response.status_code == 400
    assert response.json() == {"name": ["a campaign named 'a-mturk' exists already"]}
    assert Campaign.objects.filter(name="a-mturk").count() == 1


def test_staff_resolve_their_own_or_the_only_one_or_the_owner_they_name(alices, other_researcher, staff):
    admin = token_client(staff)
    assert admin.get("/api/campaigns/a-mturk/").json()["owner"] == "alice"  # the only one of the name
    campaign_create(collection=alices.collection, name="a-mturk", owner=other_researcher, seed=1)

    ambiguous = admin.get("/api/campaigns/a-mturk/")
    assert ambiguous.status_code == 400
    assert "alice" in ambiguous.json()["owner"][0] and "bob" in ambiguous.json()["owner"][0]
    assert admin.get("/api/campaigns/a-mturk/?owner=bob").json()["owner"] == "bob"
    assert admin.get("/api/campaigns/a-mturk/?owner=alice").json()["owner"] == "alice"
    assert admin.get("/api/campaigns/a-mturk/?owner=nobody").status_code == 404
    # a researcher's owner parameter reaches nobody else's campaign
    bob = token_client(other_researcher)
    assert bob.get("/api/campaigns/a-mturk/?owner=alice").json()["owner"] == "bob"


def test_the_dashboard_creates_and_shows_the_callers_own(alices, other_researcher, client):
    client.force_login(other_researcher)
    assert client.get("/dashboard/campaigns/a-mturk/").status_code == 404
    response = client.post(
        "/dashboard/campaigns/new/",
        {
            "name": "a-mturk",
            "collection": "demo",
            "mode": "crowd",
            "k": 2,
            "final_stage_size": 4,
            "opponents": 3,
            "seed": 0,
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Campaign.objects.get(name="a-mturk", owner=other_researcher).status == "draft"
    assert client.get("/dashboard/campaigns/a-mturk/").status_code == 200


def test_commands_take_owner_when_several_owners_use_a_name(alices, other_researcher, capsys):
    call_command(
        "campaign_create",
        "a-mturk",
        "--collection",
        "demo",
        "--owner",
        "bob",
        "-k",
        "2",
        "-F",
        "4",
        "-P",
        "3",
    )
    assert Campaign.objects.filter(name="a-mturk").count() == 2

    with pytest.raises(CommandError, match=r"several campaigns are named 'a-mturk' \(owners: alice, bob\)"):
        call_command("campaign_status", "a-mturk")
    capsys.readouterr()
    call_command("campaign_status", "a-mturk", "--owner", "bob", "--json")
    assert '"campaign": "a-mturk"' in capsys.readouterr().out
    call_command("campaign_start", "a-mturk", "--owner", "bob", "--topics", "d1")
    assert Campaign.objects.get(name="a-mturk", owner=other_researcher).status == "running"
    assert Campaign.objects.get(name="a-mturk", owner=alices.owner).status == "draft"
    with pytest.raises(CommandError, match="no campaign named 'a-mturk' of owner 'carol'"):
        call_command("campaign_pause", "a-mturk", "--owner", "carol")
    # the same name twice for one owner is still refused
    with pytest.raises(CommandError, match="exists already"):
        call_command(
            "campaign_create",
            "a-mturk",
            "--collection",
            "demo",
            "--owner",
            "bob",
            "-k",
            "2",
            "-F",
            "4",
            "-P",
            "3",
        )
