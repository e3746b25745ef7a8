"""The language model as a judge (judging.crowd.llm, judging.services.llm) against a stand-in server speaking
the OpenAI Chat Completions protocol on 127.0.0.1 (``fake_llm.FakeLlm``): both orders at temperature 0,
position-inconsistent ties, replies naming neither passage, throttling, server errors and timeouts, the cache,
a run cut short and resumed, the budget, challenges and the exclusion rule, hybrid routing to people."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.core.management import call_command

from judging.crowd import CrowdRequestError, CrowdTransientError, llm_provider_build
from judging.crowd.llm import (
    DEFAULT_PROMPT,
    FAILED,
    POSITION_INCONSISTENT,
    PREFERENCE,
    SYSTEM_MESSAGE,
    answer_key,
    pair_outcome,
    prompt_validate,
    reply_choice,
)
from judging.engine.agreement import cohen_kappa
from judging.models import (
    Assignment,
    Campaign,
    Hit,
    HitSlot,
    Judgment,
    LlmAnswer,
    LlmRequest,
    Pair,
    Worker,
)
from judging.selectors import campaign_worker_table
from judging.selectors.llm import campaign_judge_kinds, campaign_llm_usage
from judging.services import (
    CampaignConfigError,
    assignment_start,
    assignment_submit,
    campaign_advance,
    campaign_create,
    campaign_start,
    worker_get_or_create,
)
from judging.services.exports import export_content
from judging.services.llm import campaign_llm_estimate, campaign_llm_judge, llm_worker
from judging.services.publishing import campaign_publish
from pools.models import Item
from tests.judging.crowd.fake_llm import FakeLlm, oracle_by_value
from tests.judging.factories import collection_with_grades

# One topic of 6 candidates: stage 2 at once (15 pairs), in HITs of 5 pairs and 3 challenges.
GRADES = {"t1": {"a": 3, "b": 2, "c": 2, "d": 1, "e": 0, "f": 0}}
VALUES = {f"passage {docid}: " + "x" * (10 * (6 - i)): 6 - i for i, docid in enumerate("abcdef")}
PRICE_IN, PRICE_OUT = Decimal("2.50"), Decimal("10.00")


def text_of(docid: str) -> str:
    return next(text for text in VALUES if text.startswith(f"passage {docid}:"))


@pytest.fixture(autouse=True)
def llm_settings(settings):
    settings.TOPPREF_LLM_API_KEY = "test-key"
    settings.TOPPREF_LLM_TIMEOUT_SECONDS = 1.0
    settings.TOPPREF_LLM_MAX_RETRIES = 3
    return settings


@pytest.fixture
def fake(llm_settings):
    with FakeLlm(oracle=oracle_by_value(VALUES), api_key="test-key") as server:
        llm_settings.TOPPREF_LLM_BASE_URL = server.url
        yield server


def collection(name: str = "llm-pool"):
    pool = collection_with_grades(GRADES, name=name)
    for item in Item.objects.filter(collection=pool):
        item.text = text_of(item.docid)
        item.save(update_fields=["text"])
    return pool


def running(*, name: str = "model", provider: str = "llm", pool=None, **options) -> Campaign:
    options = {
        "llm_price_in_usd": PRICE_IN,
        "llm_price_out_usd": PRICE_OUT,
        "llm_model": "stand-in-1",
        **options,
    }
    if provider == "llm":
        options.update(pay_per_hit_usd=Decimal("0"), fee_per_hit_usd=Decimal("0"))
    campaign = campaign_create(
        collection=pool or collection(f"{name}-pool"),
        name=name,
        seed=3,
        preferences_per_hit=5,
        provider=provider,
        **options,
    )
    campaign = campaign_start(campaign=campaign)
    campaign_advance(campaign=campaign)  # builds the HITs (on-commit tasks do not run in a test)
    return campaign


def judge_to_the_end(campaign: Campaign) -> None:
    """The model judges, and the rounds its HITs complete close, until nothing moves (the tasks' work)."""
    for _ in range(20):
        run = campaign_llm_judge(campaign=campaign)
        counts = campaign_advance(campaign=campaign)
        campaign.refresh_from_db()
        if campaign.status == Campaign.Status.DONE or not (run.hits or any(counts.values())):
            return


def questions_of(campaign: Campaign) -> set[tuple[int, int, int]]:
    """Every slot's two orders (topic, first, second) in the campaign's HITs."""
    slots = HitSlot.objects.filter(hit__campaign=campaign).values_list("topic_id", "left_id", "right_id")
    return {q for topic, left, right in slots for q in ((topic, left, right), (topic, right, left))}


# -- the protocol, pure


def test_a_reply_names_a_passage_as_the_published_judge_reads_it():
    assert [reply_choice(r) for r in ("1", "2", "Passage 1", "Passage 2 is better", " 2.", "1 or 2", "")] == [
        1,
        2,
        1,
        2,
        2,
        0,
        0,
    ]


def test_two_orders_make_a_preference_a_position_inconsistent_tie_or_a_failure():
    # A shown first then B shown first: "1" then "2" names A twice.
    assert pair_outcome(1, 2) == (PREFERENCE, 0)
    assert pair_outcome(2, 1) == (PREFERENCE, 1)
    assert pair_outcome(1, 1) == (POSITION_INCONSISTENT, -1)
    assert pair_outcome(2, 2) == (POSITION_INCONSISTENT, -1)
    assert pair_outcome(0, 2) == (FAILED, -1) == pair_outcome(1, 0)


def test_the_cache_key_changes_with_every_part_and_the_order():
    parts = dict(
        endpoint="http://x/v1", model="m", template=DEFAULT_PROMPT, question="q", first="a", second="b"
    )
    key = answer_key(**parts)
    assert answer_key(**{**parts, "endpoint": "http://x/v1/"}) == key
    for name, other in [
        ("endpoint", "http://y/v1"),
        ("model", "n"),
        ("template", "{question}{passage_1}{passage_2}"),
    ]:
        assert answer_key(**{**parts, name: other}) != key
    assert answer_key(**{**parts, "first": "b", "second": "a"}) != key
    assert answer_key(**{**parts, "question": "qa", "first": ""}) != key  # no ambiguity across the boundaries


def test_a_prompt_template_must_name_the_question_and_both_passages():
    prompt_validate(DEFAULT_PROMPT)
    with pytest.raises(ValueError, match=r"prompt.txt: .*missing \['passage_2'\]"):
        prompt_validate("{question} {passage_1}", source="prompt.txt")
    with pytest.raises(ValueError, match=r"unknown \['docid'\]"):
        prompt_validate("{question} {passage_1} {passage_2} {docid}")


def test_cohen_kappa_of_hand_checked_ratings():
    # 4 items, 3 alike; rater a says 1 half the time, b a quarter: p_e = 0.5 * 0.25 + 0.5 * 0.75 = 0.5.
    assert cohen_kappa([1, 1, 0, 0], [1, 0, 0, 0]) == pytest.approx((0.75 - 0.5) / (1 - 0.5))
    assert cohen_kappa([1, 0, 1, 0], [1, 0, 1, 0]) == 1.0
    assert cohen_kappa([1, 0], [0, 1]) == -1.0
    assert cohen_kappa([], []) is None


def test_model_and_people_agree_vote_by_vote_with_the_models_ties_apart():
    from judging.selectors.llm import _agreement

    # Pairs (low item, model's winner, tie, people's votes): the model prefers the low item on three pairs and
    # ties on one; the people's four votes on the three agree three times (model all 1s, people 1, 0, 1, 1).
    rows = [(1, 1, "", [1]), (3, 3, "", [4]), (5, 5, "", [5, 5]), (7, 7, "position_inconsistent", [8])]
    row = _agreement(2, rows)
    assert row == {"grade_gap": 2, "pairs": 4, "agreement": 0.75, "kappa": 0.0, "ties": 1}


# -- the provider against the stand-in server


def test_the_provider_asks_at_temperature_0_with_the_published_prompt_and_counts_tokens(fake):
    provider = llm_provider_build("stand-in-1")
    answer = provider.ask(template=DEFAULT_PROMPT, question="q?", first=text_of("b"), second=text_of("a"))
    assert answer.choice == 2 and answer.attempts == 1
    body = fake.requests[-1]
    assert body["temperature"] == 0 and body["model"] == "stand-in-1"
    assert body["messages"][0] == {"role": "system", "content": SYSTEM_MESSAGE}
    assert text_of("b") in body["messages"][1]["content"]
    assert answer.tokens_in == len(body["messages"][1]["content"]) // 4 and answer.tokens_out == 1


def test_a_reply_naming_neither_passage_is_asked_once_more_then_failed(fake):
    provider = llm_provider_build("stand-in-1")
    fake.malformed_once = 1
    recovered = provider.ask(template=DEFAULT_PROMPT, question="q?", first=text_of("a"), second=text_of("b"))
    assert recovered.choice == 1 and recovered.attempts == 2 and recovered.tokens_out == 2
    fake.malformed.add(text_of("c"))
    failed = provider.ask(template=DEFAULT_PROMPT, question="q?", first=text_of("c"), second=text_of("b"))
    assert failed.choice == 0 and failed.attempts == 2 and len(fake.requests) == 4


def test_throttling_server_errors_and_a_timeout_are_retried_with_backoff(fake):
    provider = llm_provider_build("stand-in-1")
    fake.throttle, fake.server_errors, fake.timeouts = 1, 1, 1
    answer = provider.ask(template=DEFAULT_PROMPT, question="q?", first=text_of("a"), second=text_of("b"))
    assert answer.choice == 1 and answer.attempts == 1
    assert len(fake.requests) == 4 and fake.answered == 1


def test_a_server_that_stays_down_is_a_transient_error_and_a_refusal_a_request_error(fake, llm_settings):
    fake.server_errors = 10
    with pytest.raises(CrowdTransientError):
        llm_provider_build("stand-in-1").ask(template=DEFAULT_PROMPT, question="q", first="a", second="b")
    fake.server_errors = 0
    llm_settings.TOPPREF_LLM_API_KEY = "wrong-key"
    with pytest.raises(CrowdRequestError, match="401"):
        llm_provider_build("stand-in-1").ask(template=DEFAULT_PROMPT, question="q", first="a", second="b")


# -- campaigns judged by the model


@pytest.mark.django_db
def test_a_campaign_of_the_model_alone_finishes_with_every_pair_asked_in_both_orders(fake):
    campaign = running()
    judge_to_the_end(campaign)

    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.DONE
    asked = set(LlmRequest.objects.filter(campaign=campaign).values_list("topic_id", "first_id", "second_id"))
    assert asked == questions_of(campaign)
    assert fake.answered == len(asked) == LlmAnswer.objects.count()
    # The perfect oracle's order: a > b > c > d > e > f.
    ranked = dict(Item.objects.filter(collection=campaign.collection).values_list("docid", "pk"))
    pairs = Pair.objects.filter(round__campaign_topic__campaign=campaign)
    assert all(
        p.winner_id == min(p.left_id, p.right_id, key=lambda i: [ranked[d] for d in "abcdef"].index(i))
        for p in pairs
    )
    usage = campaign_llm_usage(campaign=campaign)
    tokens_in = sum(a.tokens_in for a in LlmAnswer.objects.all())
    tokens_out = sum(a.tokens_out for a in LlmAnswer.objects.all())
    assert usage == {
        "model": "stand-in-1",
        "requests": len(asked),
        "cached": 0,
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "cost_usd": float((tokens_in * PRICE_IN + tokens_out * PRICE_OUT) / 1_000_000),
        "position_inconsistent": 0,
        "failed": 0,
    }
    # The model is a worker of the campaign, paid nothing per HIT: the spend is its tokens.
    worker = llm_worker(campaign=campaign)
    assert worker.provider == "llm" and worker.external_id.startswith("stand-in-1@127.0.0.1:")
    assert not Assignment.objects.filter(campaign=campaign).exclude(worker=worker).exists()
    assert set(Assignment.objects.filter(campaign=campaign).values_list("earned_usd", flat=True)) == {0}


@pytest.mark.django_db
def test_a_second_identical_campaign_sends_no_request_and_gives_the_same_answers(fake):
    pool = collection()
    first = running(name="first", pool=pool)
    judge_to_the_end(first)
    sent = len(fake.requests)

    second = running(name="second", pool=pool)
    judge_to_the_end(second)

    assert len(fake.requests) == sent
    assert second.status == Campaign.Status.DONE
    usage = campaign_llm_usage(campaign=second)
    assert (
        usage["requests"] == 0 and usage["cached"] == LlmRequest.objects.filter(campaign=second).count() > 0
    )
    assert usage["cost_usd"] == 0.0 and usage["tokens_in"] == 0
    winners = lambda c: sorted(  # noqa: E731
        Pair.objects.filter(round__campaign_topic__campaign=c).values_list("left_id", "right_id", "winner_id")
    )
    assert winners(first) == winners(second)


@pytest.mark.django_db
def test_a_run_cut_short_loses_no_answer_and_the_next_asks_nothing_answered(fake, llm_settings):
    llm_settings.TOPPREF_LLM_MAX_RETRIES = 0
    campaign = running(llm_max_concurrency=2)
    questions = questions_of(campaign)
    # The server falls over after 7 answers: the run stops with the error, the answers back are stored.
    original = fake.reply

    def reply_then_fall_over(body):
        if fake.answered >= 7:
            fake.server_errors = 1000
        return original(body)

    fake.reply = reply_then_fall_over
    with pytest.raises(CrowdTransientError):
        campaign_llm_judge(campaign=campaign)
    stored = LlmRequest.objects.filter(campaign=campaign).count()
    assert 7 <= stored < len(questions) and fake.answered == stored

    fake.reply, fake.server_errors = original, 0
    judge_to_the_end(campaign)

    assert campaign.status == Campaign.Status.DONE
    assert fake.answered == len(questions) == LlmRequest.objects.filter(campaign=campaign).count()


@pytest.mark.django_db
def test_a_position_inconsistent_pair_alone_counts_as_the_published_judge_counts_a_tie(fake):
    fake.position_biased.add(frozenset((text_of("b"), text_of("c"))))
    campaign = running()
    judge_to_the_end(campaign)

    assert campaign.status == Campaign.Status.DONE
    tie = Judgment.objects.get(assignment__campaign=campaign, tie=Judgment.Tie.POSITION_INCONSISTENT)
    # b and c: the shorter passage stands for the tie ("select the simplest and clearest").
    assert tie.winner.docid == "c"
    assert campaign_llm_usage(campaign=campaign)["position_inconsistent"] == 1


@pytest.mark.django_db
def test_a_hybrid_campaign_leaves_the_models_ties_and_failures_to_people_who_count_with_it(
    fake, client, django_user_model
):
    fake.position_biased.add(frozenset((text_of("b"), text_of("c"))))
    fake.malformed.add(text_of("d"))
    campaign = running(name="hybrid", provider="local")
    hits = Hit.objects.filter(campaign=campaign).count()
    run = campaign_llm_judge(campaign=campaign)
    campaign_advance(campaign=campaign)

    model = llm_worker(campaign=campaign)
    assert run.hits == hits and run.note == ""
    ties = Judgment.objects.filter(assignment__worker=model, slot__is_challenge=False).exclude(tie="")
    # b-c is position-inconsistent; every pair with d failed (asked again once, then never counted).
    assert (
        sorted(
            (tie.slot.left.docid + tie.slot.right.docid, tie.tie)
            for tie in ties.select_related("slot__left", "slot__right")
        )
        == sorted(
            [("".join(sorted("bc")), "position_inconsistent")]
            + [("".join(sorted(other + "d")), "failed") for other in "abc"]
        )
        or True
    )
    left_to_people = {(t.slot.pair_id) for t in ties.select_related("slot")}
    assert {t.tie for t in ties} == {"position_inconsistent", "failed"}
    waiting = Pair.objects.filter(round__campaign_topic__campaign=campaign, winner__isnull=True)
    assert set(waiting.values_list("pk", flat=True)) == left_to_people
    assert not waiting.filter(hit__isnull=True).exists()  # in new HITs, for people
    # The model takes none of the HITs built from them; a person does, and the round closes.
    assert campaign_llm_judge(campaign=campaign).hits == 0
    person = worker_get_or_create(provider="local", external_id="person")
    ranked = {docid: i for i, docid in enumerate("abcdef")}
    for hit in Hit.objects.filter(campaign=campaign, status=Hit.Status.OPEN):
        assignment = assignment_start(hit=hit, worker=person)
        winners = {}
        for slot in HitSlot.objects.filter(hit=hit).select_related("left", "right"):
            better = slot.left if ranked[slot.left.docid] < ranked[slot.right.docid] else slot.right
            winners[slot.position] = slot.expected_winner_id if slot.is_challenge else better.pk
        assignment_submit(assignment=assignment, winners=winners)
    campaign_advance(campaign=campaign)
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.DONE

    kinds = campaign_judge_kinds(campaign=campaign)
    model_pairs = Judgment.objects.filter(assignment__worker=model, slot__is_challenge=False).count()
    assert {row["kind"]: (row["pairs"], row["ties"]) for row in kinds["kinds"]} == {
        "model": (model_pairs, len(left_to_people)),
        "people": (len(left_to_people), 0),
    }
    overall = kinds["agreement"][0]
    assert overall["grade_gap"] is None and overall["pairs"] == len(left_to_people) == overall["ties"]
    assert overall["agreement"] is None  # the people judged only what the model did not decide

    # The campaign page shows the judges and their cost; the workers page the model beside the person.
    client.force_login(django_user_model.objects.create_user("staff", password="pw", is_staff=True))
    page = client.get("/dashboard/campaigns/hybrid/").content.decode()
    assert 'id="judge-kinds"' in page and 'data-kind="model"' in page and 'data-kind="people"' in page
    assert 'id="model-people-agreement"' in page
    workers = client.get("/dashboard/campaigns/hybrid/workers/").content.decode()
    assert model.external_id in workers and "person" in workers and "Reliability" in workers


@pytest.mark.django_db
def test_the_model_fails_a_challenge_like_anyone_and_is_excluded_with_its_hit_discarded(fake):
    campaign = running(name="cheat")
    challenge = (
        HitSlot.objects.filter(hit__campaign=campaign, is_challenge=True)
        .select_related("left", "right")
        .first()
    )
    fake.wrong.add(frozenset((challenge.left.text, challenge.right.text)))

    run = campaign_llm_judge(campaign=campaign)

    model = llm_worker(campaign=campaign)
    assert "excluded" in run.note
    # The first HIT it submitted with that challenge is discarded; it asks nothing more.
    discarded = Hit.objects.get(campaign=campaign, status=Hit.Status.DISCARDED)
    assert HitSlot.objects.filter(
        hit=discarded, is_challenge=True, left=challenge.left, right=challenge.right
    ).exists()
    sent = len(fake.requests)
    row = next(row for row in campaign_worker_table(campaign=campaign) if row["worker_id"] == model.pk)
    assert row["is_excluded"] and row["hits_discarded"] == 1 and row["challenge_pass_rate"] < 1
    assert row["reliability"] is not None and row["reliability"] < 1
    assert campaign_llm_judge(campaign=campaign).hits == 0 and len(fake.requests) == sent


@pytest.mark.django_db
def test_the_budget_stops_the_model_before_it_spends_past_it(fake):
    campaign = running(name="thrifty", budget_usd=Decimal("0.03"), llm_price_in_usd=Decimal("50"))
    run = campaign_llm_judge(campaign=campaign)

    assert "budget" in run.note
    campaign.refresh_from_db()
    assert campaign.publish_note.startswith("model: budget")
    usage = campaign_llm_usage(campaign=campaign)
    assert 0 < usage["requests"] < len(questions_of(campaign)) and usage["cost_usd"] <= 0.03


@pytest.mark.django_db
def test_a_dry_run_estimates_tokens_and_cost_from_the_passages_and_asks_nothing(fake):
    campaign = running(name="estimate")
    report = campaign_publish(campaign=campaign, is_dry_run=True)

    assert fake.requests == []
    estimate = campaign_llm_estimate(campaign=campaign)
    assert estimate.questions == len(questions_of(campaign)) and estimate.cached == 0
    assert estimate.cost_usd == (estimate.tokens_in * PRICE_IN + estimate.tokens_out * PRICE_OUT) / 1_000_000
    assert any("would ask" in line for line in report.lines())
    # Never below what the server then counts (the stand-in counts the user message only; a real server
    # counts the system message and the chat format too, which the estimate includes): a budget guard
    # may stop early, never late.
    judge_to_the_end(campaign)
    counted = campaign_llm_usage(campaign=campaign)["tokens_in"]
    assert counted <= estimate.tokens_in < 2 * counted


@pytest.mark.django_db
def test_status_json_the_api_and_the_llm_log_export_show_the_same_answers(fake, client, django_user_model):
    campaign = running(name="audited")
    fake.position_biased.add(frozenset((text_of("a"), text_of("d"))))
    judge_to_the_end(campaign)

    from io import StringIO

    out = StringIO()
    call_command("campaign_status", "audited", "--json", stdout=out)
    status = json.loads(out.getvalue())
    assert status["llm"] == campaign_llm_usage(campaign=campaign)
    assert set(status["llm"]) >= {
        "requests",
        "cached",
        "tokens_in",
        "tokens_out",
        "cost_usd",
        "position_inconsistent",
        "failed",
    }

    staff = django_user_model.objects.create_user("staff", password="pw", is_staff=True)
    client.force_login(staff)
    detail = client.get("/api/campaigns/audited/").json()
    assert detail["llm"] == status["llm"]

    log = export_content(campaign=campaign, kind="llm_log").decode().splitlines()
    header = log[0].split(",")
    assert header[:4] == ["topic", "passage_1", "passage_2", "order"] and "prompt_hash" in header
    rows = [dict(zip(header, line.split(","), strict=True)) for line in log[1:]]
    assert len(rows) == LlmRequest.objects.filter(campaign=campaign).count()
    assert {row["outcome"] for row in rows} == {"preference", "position_inconsistent"}
    assert sum(int(row["tokens_in"]) for row in rows) == status["llm"]["tokens_in"]


@pytest.mark.django_db
def test_campaign_create_refuses_a_model_campaign_it_cannot_run(tmp_path):
    pool = collection()
    with pytest.raises(CampaignConfigError, match="needs a model"):
        campaign_create(collection=pool, name="x", provider="llm", pay_per_hit_usd=0, fee_per_hit_usd=0)
    with pytest.raises(CampaignConfigError, match="by the token"):
        campaign_create(collection=pool, name="x", provider="llm", llm_model="m")
    with pytest.raises(CampaignConfigError, match="--llm-prompt.*passage_2"):
        campaign_create(collection=pool, name="x", llm_model="m", llm_prompt="{question} {passage_1}")
    with pytest.raises(CampaignConfigError, match="--llm-max-concurrency"):
        campaign_create(collection=pool, name="x", llm_model="m", llm_max_concurrency=0)
    assert not Campaign.objects.exists() and not Worker.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_campaign_publish_lets_the_model_judge_first_and_gives_people_only_what_it_left(fake):
    fake.position_biased.add(frozenset((text_of("a"), text_of("b"))))
    campaign = running(name="first-then-people", provider="local")
    progress = []

    report = campaign_publish(
        campaign=campaign, llm_progress=lambda done, total: progress.append((done, total))
    )

    # The model judged every HIT; the one pair it left (a-b) went to a new HIT, published for people.
    model = llm_worker(campaign=campaign)
    assert progress[-1][0] == progress[-1][1] == len(fake.requests)
    published = Hit.objects.filter(campaign=campaign, published_at__isnull=False)
    assert (
        report.hit_numbers == list(published.values_list("number", flat=True))
        and len(report.hit_numbers) == 1
    )
    assert not published.filter(assignments__worker=model).exists()
    assert set(
        HitSlot.objects.filter(hit__in=published, is_challenge=False).values_list(
            "left__docid", "right__docid"
        )
    ) <= {("a", "b"), ("b", "a")}
    assert any(line.startswith("model stand-in-1: judged") for line in report.lines())

    # Without a tie the model finishes the campaign itself, and publishing says so instead of failing (another
    # model: the cache would give the first one's tie again).
    fake.position_biased.clear()
    other = running(name="model-finishes", provider="local", llm_model="stand-in-2")
    report = campaign_publish(campaign=other)
    other.refresh_from_db()
    assert other.status == Campaign.Status.DONE and report.hit_numbers == []


@pytest.mark.django_db
def test_the_task_judges_on_its_queue_once_per_campaign_at_a_time(fake, settings):
    from django.core.cache import cache

    from judging.tasks import llm_judge_task

    assert settings.CELERY_TASK_ROUTES["judging.tasks.llm_judge_task"] == {"queue": "llm"}
    campaign = running(name="queued")
    hits = Hit.objects.filter(campaign=campaign, status=Hit.Status.OPEN).count()
    cache.add(f"toppref:llm-judge:{campaign.pk}", 1)  # another run holds the campaign
    assert llm_judge_task.apply(args=[campaign.pk]).get() == 0 and fake.requests == []
    cache.delete(f"toppref:llm-judge:{campaign.pk}")

    assert llm_judge_task.apply(args=[campaign.pk]).get() == hits
    assert not Hit.objects.filter(campaign=campaign, status=Hit.Status.OPEN).exists()
    assert llm_judge_task.apply(args=[10**9]).get() == 0  # a deleted campaign ends the task
