"""A campaign's top-k with how sure it is: the judge model fitted to the counted answers in the background
(``campaign_confidence_refresh``), read by the ``confidence`` export, the API's topics and the campaign page."""

import pytest
from django.contrib.auth.models import Group, User
from django.urls import reverse
from rest_framework.test import APIClient

from judging.engine import PerfectOracle
from judging.models import Assignment, CampaignConfidence, Candidate
from judging.selectors import campaign_confidence, campaign_judge_model_inputs, campaign_ranked
from judging.services import campaign_create, campaign_start
from judging.services.confidence import campaign_confidence_refresh, campaign_confidence_running
from judging.services.exports import export_content
from judging.services.simulated_crowd import campaign_simulate
from judging.services.sweep import campaign_advance_running
from tests.judging.factories import collection_with_grades

pytestmark = pytest.mark.django_db

K = 2


def finished_campaign(owner=None):
    """Two topics judged by a consistent crowd: one of 9 candidates (stage 1 and 2), one of 4 (stage 2 only)."""
    relevant = {"t1": {f"t1-d{i}": 2 for i in range(9)}, "t2": {f"t2-d{i}": 1 for i in range(4)}}
    values = {t: {docid: float((n * 7) % 11 + 1) for n, docid in enumerate(g)} for t, g in relevant.items()}
    # non-relevant passages: the challenges' losers
    grades = {t: g | {f"{t}-n{i}": 0 for i in range(3)} for t, g in relevant.items()}
    collection = collection_with_grades(grades)
    if owner is not None:
        collection.owner = owner
        collection.save(update_fields=["owner"])
    campaign = campaign_create(
        collection=collection, name="conf", seed=11, k=K, opponents=3, final_stage_size=5, owner=owner
    )
    campaign = campaign_start(campaign=campaign)
    campaign_simulate(campaign=campaign, oracle=PerfectOracle(values), worker_count=3)
    campaign.refresh_from_db()
    assert campaign.status == "done"
    return campaign, values


def test_the_judge_model_reads_only_the_answers_that_count():
    # Given a finished campaign
    campaign, _ = finished_campaign()
    inputs = campaign_judge_model_inputs(campaign=campaign)
    counted = sum(len(votes) for votes in inputs.votes.values())

    # When one assignment stops counting (its provider never confirmed it)
    assignment = Assignment.objects.filter(campaign=campaign, status="accepted").first()
    answers = assignment.judgments.filter(slot__is_challenge=False).count()
    Assignment.objects.filter(pk=assignment.pk).update(confirmed_at=None)

    # Then its answers leave the model's votes, and every candidate is still a candidate with its grade
    after = campaign_judge_model_inputs(campaign=campaign)
    assert answers > 0
    assert sum(len(votes) for votes in after.votes.values()) == counted - answers
    assert sorted(after.candidates) == ["t1", "t2"] and len(after.candidates["t1"]) == 9
    assert after.grades["t1"]["t1-d0"] == 2.0
    assert all(judge.startswith("w") for judge, _ in after.challenges) and after.challenges


def test_refresh_stores_every_candidate_with_probabilities_that_add_up():
    # Given a finished campaign judged by a consistent crowd
    campaign, values = finished_campaign()

    # When the background fits the judge model
    row = campaign_confidence_refresh(campaign=campaign)

    # Then every candidate has a p_top_k and a p_best; per topic p_best sums to at least 1 (ties for best
    # count for each) and p_top_k to at least k; the crowd's top-k is where the model puts its mass
    stored = {docid for items in row.topics.values() for docid, _, _ in items}
    assert stored == set(Candidate.objects.values_list("item__docid", flat=True))
    for topic, items in row.topics.items():
        assert all(0.0 <= p <= 1.0 and 0.0 <= b <= 1.0 for _, p, b in items)
        assert sum(b for _, _, b in items) >= 0.99
        assert sum(p for _, p, _ in items) >= K - 0.01
        ranked = [item.docid for item in campaign_ranked(campaign=campaign)[topic] if item.rank <= K]
        p_top_k = {docid: p for docid, p, _ in items}
        outside = [p for docid, p in p_top_k.items() if docid not in ranked]
        assert min(p_top_k[docid] for docid in ranked) > max(outside, default=0.0)
    assert set(row.judges) and all(0.0 <= eta <= 1.0 for eta, *_ in row.judges.values())


def test_refresh_is_skipped_while_the_answers_are_unchanged():
    campaign, _ = finished_campaign()
    first = campaign_confidence_refresh(campaign=campaign)

    again = campaign_confidence_refresh(campaign=campaign)

    assert again.computed_at == first.computed_at and CampaignConfidence.objects.count() == 1


def test_the_sweep_fits_a_done_campaign_once():
    # Given a campaign that finished with no confidence fitted yet
    campaign, _ = finished_campaign()
    CampaignConfidence.objects.all().delete()

    # When the sweep runs twice
    first = campaign_advance_running()
    second = campaign_advance_running()

    # Then the first fits it and the second finds it up to date
    assert first["confidence_fitted"] == 1 and second["confidence_fitted"] == 0
    assert campaign_confidence(campaign=campaign) is not None
    assert campaign_confidence_running() == 0


def test_the_confidence_export_lists_every_candidate_of_every_topic():
    campaign, _ = finished_campaign()

    lines = export_content(campaign=campaign, kind="confidence").decode().splitlines()

    rows = [line.split("\t") for line in lines]
    assert len(rows) == Candidate.objects.count() and all(len(row) == 4 for row in rows)
    assert [row[0] for row in rows] == sorted(row[0] for row in rows)
    stored = CampaignConfidence.objects.get(campaign=campaign).topics
    for topic, docid, p_top_k, p_best in rows:
        assert [docid, float(p_top_k), float(p_best)] in stored[topic]


def test_campaign_export_command_writes_the_confidence(tmp_path):
    from django.core.management import call_command

    campaign, _ = finished_campaign()
    out = tmp_path / "confidence.tsv"

    call_command("campaign_export", campaign.name, "--kind", "confidence", "--out", str(out))

    assert out.read_text() == export_content(campaign=campaign, kind="confidence").decode()


def _researcher():
    user = User.objects.create_user("ann", password="pw-for-tests-only")
    user.groups.add(Group.objects.get_or_create(name="researchers")[0])
    return user


def test_the_api_topics_carry_p_top_k_and_p_best_for_each_top_k_item():
    # Given a researcher's finished campaign, before and after the background fit
    user = _researcher()
    campaign, _ = finished_campaign(owner=user)
    client = APIClient()
    client.force_authenticate(user)
    url = reverse("api-campaign-topics", args=[campaign.name])

    before = client.get(url).json()
    campaign_confidence_refresh(campaign=campaign)
    after = client.get(url).json()

    # Then the top-k items carry null before the first fit and the stored probabilities after it
    rows = before["results"] if isinstance(before, dict) else before
    assert all(item["p_top_k"] is None and item["p_best"] is None for row in rows for item in row["top_k"])
    assert all(row["confidence_computed_at"] is None for row in rows)
    stored = {
        (topic, docid): (p, b)
        for topic, items in campaign_confidence(campaign=campaign).topics.items()
        for docid, p, b in [(i.docid, i.p_top_k, i.p_best) for i in items.items]
    }
    rows = after["results"] if isinstance(after, dict) else after
    assert rows and all(row["top_k"] for row in rows)
    fitted = CampaignConfidence.objects.get(campaign=campaign).computed_at
    assert {row["confidence_computed_at"] for row in rows} == {fitted.isoformat().replace("+00:00", "Z")}
    for row in rows:
        for item in row["top_k"]:
            assert (item["p_top_k"], item["p_best"]) == stored[(row["topic"], item["docid"])]


def test_the_campaign_page_lists_the_topics_the_model_is_least_sure_of(client):
    # Given a finished campaign whose stored confidence leaves one topic in doubt
    user = _researcher()
    campaign, _ = finished_campaign(owner=user)
    row = campaign_confidence_refresh(campaign=campaign)
    doubtful = [[docid, 0.5, 0.3] for docid, _, _ in row.topics["t1"]]
    CampaignConfidence.objects.filter(pk=row.pk).update(topics={**row.topics, "t1": doubtful})
    client.force_login(user)

    page = client.get(reverse("dashboard:campaign", args=[campaign.name])).content.decode()

    # Then the page names that topic among the least sure, with its candidates in doubt
    assert 'id="least-sure-topics"' in page
    assert 'data-confidence-topic="t1"' in page
    assert f"{doubtful[0][0]} (0.50)" in page


def test_the_page_names_the_candidate_most_likely_best_and_lists_a_topic_unsure_only_of_its_best(client):
    # Given stored confidence where t1's top-2 is sure but its best is not the first by score (under noisy
    # sorting the two can differ), and t2 sure of everything
    user = _researcher()
    campaign, _ = finished_campaign(owner=user)
    row = campaign_confidence_refresh(campaign=campaign)
    t1 = [docid for docid, _, _ in row.topics["t1"]]
    unsure_best = [[t1[0], 1.0, 0.4], [t1[1], 1.0, 0.6]] + [[docid, 0.0, 0.0] for docid in t1[2:]]
    t2 = [docid for docid, _, _ in row.topics["t2"]]
    sure = [[t2[0], 1.0, 1.0], [t2[1], 1.0, 0.0]] + [[docid, 0.0, 0.0] for docid in t2[2:]]
    CampaignConfidence.objects.filter(pk=row.pk).update(topics={"t1": unsure_best, "t2": sure})
    client.force_login(user)

    page = client.get(reverse("dashboard:campaign", args=[campaign.name])).content.decode()

    # Then t1 is listed, for its best alone, with the second by score named as most likely best; t2 is not
    assert 'data-confidence-topic="t1"' in page and 'data-confidence-topic="t2"' not in page
    assert f"<td>{t1[1]} (0.60)</td>" in page


def test_a_fit_of_a_draft_does_not_stand_for_the_started_campaign(client):
    # Given a draft campaign whose confidence was fitted before it had candidates
    user = _researcher()
    relevant = {"t1": {f"t1-d{i}": 2 for i in range(6)}}
    collection = collection_with_grades({"t1": relevant["t1"] | {f"t1-n{i}": 0 for i in range(3)}})
    collection.owner = user
    collection.save(update_fields=["owner"])
    campaign = campaign_create(collection=collection, name="draft", seed=3, k=K, owner=user)
    draft = campaign_confidence_refresh(campaign=campaign, force=True)
    assert draft.topics == {}
    client.force_login(user)
    page = client.get(reverse("dashboard:campaign", args=[campaign.name])).content.decode()
    assert "Not fitted yet" in page and "The model is sure" not in page

    from django.core.management import CommandError, call_command

    with pytest.raises(
        CommandError, match="campaign draft has no candidates yet .status draft.: its confidence"
    ):
        call_command("campaign_export", "draft", "--kind", "confidence", "--owner", user.username)

    # When it starts, before any answer, and the sweep refreshes it (not forced, within the refresh interval)
    campaign = campaign_start(campaign=campaign)
    started = campaign_confidence_refresh(campaign=campaign)

    # Then the fit is redone over its candidates: every one carries its prior's probabilities
    assert sorted(docid for docid, _, _ in started.topics["t1"]) == sorted(
        Candidate.objects.filter(campaign_topic__campaign=campaign).values_list("item__docid", flat=True)
    )


def test_the_workers_table_and_api_give_each_judge_the_judge_models_reliability(client):
    # Given a researcher's finished campaign, before and after the background fit
    user = _researcher()
    campaign, _ = finished_campaign(owner=user)
    api = APIClient()
    api.force_authenticate(user)
    url = f"/api/campaigns/{campaign.name}/workers/"
    before = api.get(url).json()["results"]
    row = campaign_confidence_refresh(campaign=campaign)

    after = api.get(url).json()["results"]

    # Then every worker has null before the first fit and, after it, the eta the fit stored for them
    assert before and all(worker["model_reliability"] is None for worker in before)
    assert len(after) == len(before)
    for worker in after:
        assert worker["model_reliability"] == row.judges[f"w{worker['worker_id']}"][0]
    # and the page shows the column, sortable
    client.force_login(user)
    page = client.get(
        reverse("dashboard:campaign-workers", args=[campaign.name]), {"sort": "model_reliability"}
    ).content.decode()
    assert "Judge model eta" in page and 'aria-sort="ascending"' in page
    assert f"{after[0]['model_reliability']:.3f}" in page


def test_the_workers_export_carries_both_reliabilities():
    campaign, _ = finished_campaign()
    row = campaign_confidence_refresh(campaign=campaign)

    lines = export_content(campaign=campaign, kind="workers").decode().splitlines()

    header = lines[0].split(",")
    assert header[-2:] == ["reliability", "model_reliability"]
    etas = sorted(float(line.split(",")[-1]) for line in lines[1:])
    assert etas == sorted(eta for eta, *_ in row.judges.values() if eta is not None)


def test_the_openapi_schema_names_p_top_k_and_p_best_of_each_top_k_item():
    schema = APIClient().get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    item = schema["components"]["schemas"]["TopKItem"]["properties"]
    assert item["p_top_k"]["type"] == "number" and item["p_top_k"]["nullable"] is True
    assert item["p_best"]["type"] == "number" and item["p_best"]["nullable"] is True
    topic = schema["components"]["schemas"]["Topic"]["properties"]
    assert topic["top_k"]["items"]["$ref"] == "#/components/schemas/TopKItem"
