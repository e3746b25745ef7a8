"""Management commands (campaign_create / start / simulate / advance / export, demo_run) and the admin pages."""

import json
import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from judging.engine import PerfectOracle
from judging.models import Campaign, CampaignTopic
from judging.selectors import campaign_progress
from judging.services.simulated_crowd import campaign_simulate
from pools.models import Topic
from pools.services import demo_load
from pools.trec import read_qrels
from tests.conftest import DEMO_DIR
from tests.judging.factories import collection_with_grades, graded_pool


def run(*args):
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.fixture
def oracle_file(tmp_path):
    path = tmp_path / "oracle.txt"
    lines = [f"1_1 Q0 a-r{i:02d} {100 - i}" for i in range(12)] + [
        f"1_2 Q0 b-r{i:02d} {100 - i}" for i in range(4)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.django_db
def test_campaign_commands_run_a_campaign_from_creation_to_export(oracle_file, tmp_path):
    collection_with_grades({"1_1": graded_pool("a", 12), "1_2": graded_pool("b", 4)}, name="tiny")

    created = run("campaign_create", "pilot", "--collection", "tiny", "--seed", "3")
    started = run("campaign_start", "pilot")
    simulated = json.loads(run("campaign_simulate", "pilot", "--oracle", str(oracle_file)))
    out = tmp_path / "prefs.txt"
    run("campaign_export", "pilot", "--out", str(out))

    assert created.startswith("campaign pilot (crowd) over tiny: k=5 F=9 P=7 culling=half seed=3")
    assert "is running" in started
    assert simulated["status"] == "done" and simulated["pairs_queued"] == 0
    lines = out.read_text().splitlines()
    assert len(lines) == 12 + 3 + 4 + 3
    values = {line.split()[2]: float(line.split()[3]) for line in lines}
    assert (
        values["a-r00"] == 50.0
        and values["b-r00"] == 50.0
        and values["b-r03"] == 20.0
        and values["a-n00"] == 0.0
    )


@pytest.mark.django_db
def test_campaign_create_reports_broken_parameters():
    collection_with_grades({"1_1": graded_pool("a", 3)}, name="tiny")

    with pytest.raises(CommandError, match="F > P > k"):
        run("campaign_create", "bad", "--collection", "tiny", "-P", "9")
    with pytest.raises(CommandError, match="no collection named 'nope'"):
        run("campaign_create", "bad", "--collection", "nope")

    assert Campaign.objects.count() == 0


@pytest.mark.django_db
def test_campaign_start_of_a_pilot_takes_only_the_named_topics():
    collection_with_grades({"1_1": graded_pool("a", 12), "1_2": graded_pool("b", 4)}, name="tiny")
    run("campaign_create", "pilot", "--collection", "tiny")

    run("campaign_start", "pilot", "--topics", "1_2")

    assert list(CampaignTopic.objects.values_list("topic__topic_id", flat=True)) == ["1_2"]
    with pytest.raises(CommandError, match="no campaign named 'other'"):
        run("campaign_start", "other")


@pytest.mark.django_db
def test_campaign_advance_reports_what_it_did(oracle_file):
    collection_with_grades({"1_1": graded_pool("a", 6)}, name="tiny")
    run("campaign_create", "c", "--collection", "tiny")
    run("campaign_start", "c")

    output = run("campaign_advance", "c")

    assert output == "c: rounds_opened 0, rounds_closed 0, hits_expired 0, hits_built 2\n"


@pytest.mark.django_db
def test_demo_run_prints_the_crowd_and_tournament_top_k():
    demo_load(directory=DEMO_DIR)

    output = run("demo_run")
    again = run("demo_run")

    assert "Crowd campaign demo-crowd (k=5, F=9, P=7, seed 1): done" in output
    # A consistent crowd never culls its best item and ranks it first in stage 2
    oracle = PerfectOracle(read_qrels(DEMO_DIR / "qrels.preference.txt"))
    topics = sorted(Topic.objects.filter(collection__name="demo").values_list("topic_id", flat=True))
    firsts = {
        line.split()[0]: next(word for word in line.split() if word.startswith("1:"))[2:]
        for line in output.splitlines()
        if line.split() and line.split()[0] in topics
    }
    assert firsts == {topic: oracle.ranking(topic, oracle.values[topic])[0] for topic in topics}
    assert "Dedicated tournament demo-tournament on topic" in output and "oracle differs" not in output
    assert _without_timings(again) == _without_timings(output) and Campaign.objects.count() == 4
    # one campaign of each mode stays open for judging in the browser
    open_modes = set(
        Campaign.objects.filter(name__startswith="demo-open-", status="running").values_list(
            "mode", flat=True
        )
    )
    assert open_modes == {"crowd", "tournament"} and "Open to judge in the browser" in output


def _without_timings(output: str) -> list[str]:
    return [line for line in output.splitlines() if not re.fullmatch(r"    \w[\w ]* done in \d+\.\d s", line)]


@pytest.mark.django_db
def test_demo_run_tells_its_stages_with_timings_and_explains_its_tables():
    demo_load(directory=DEMO_DIR)

    lines = run("demo_run").splitlines()

    # one line opening each stage and one closing it with its elapsed time, in the order they run
    stages = [line.split(":")[0] for line in lines if line.startswith("==> ")]
    timings = [
        line for line in lines if re.fullmatch(r"    (crowd campaign|tournament) done in \d+\.\d s", line)
    ]
    assert stages == ["==> crowd campaign", "==> tournament"] and len(timings) == 2
    # each table is preceded by a legend naming its columns
    crowd_header = next(index for index, line in enumerate(lines) if line.startswith("topic "))
    assert lines[crowd_header].split() == [
        "topic",
        "pool",
        "rounds",
        "judg.",
        "top-5",
        "(rank:docid)",
        "oracle",
    ]
    legend = " ".join(lines[crowd_header - 3 : crowd_header])
    for column in ("pool =", "rounds =", "judg. =", "top-5 =", "oracle ="):
        assert column in legend
    assert any(line.startswith("Columns: rank, docid; crowd =") for line in lines)
    # each question's text sits under its row, wrapped at word boundaries, never cut mid-word
    questions = dict(Topic.objects.filter(collection__name="demo").values_list("topic_id", "question"))
    for topic_id, question in questions.items():
        row = next(index for index, line in enumerate(lines) if line.split()[:1] == [topic_id])
        shown = []
        for line in lines[row + 1 :]:
            if not line.startswith(" " * 9) or line.strip().startswith(("crowd", "tournament")):
                break
            shown.append(line.strip())
        assert " ".join(shown) == question
    assert all(len(line) <= 110 for line in lines if not line.startswith(("Dedicated", "Crowd")))


@pytest.mark.django_db
def test_admin_pages_of_every_judging_model_render(admin_client, oracle_file):
    collection = collection_with_grades({"1_1": graded_pool("a", 6)}, name="tiny")
    run("campaign_create", "c", "--collection", collection.name)
    run("campaign_start", "c")

    campaign_simulate(
        campaign=Campaign.objects.get(),
        oracle=PerfectOracle({"1_1": {f"a-r{i:02d}": 6 - i for i in range(6)}}),
    )
    names = [
        "campaign",
        "campaigntopic",
        "round",
        "pair",
        "hit",
        "worker",
        "assignment",
        "judgment",
        "tournamentjudgment",
    ]

    statuses = {
        name: admin_client.get(reverse(f"admin:judging_{name}_changelist")).status_code for name in names
    }
    topic_page = admin_client.get(
        reverse("admin:judging_campaigntopic_change", args=[CampaignTopic.objects.get().pk])
    )
    hit_add = admin_client.get(reverse("admin:judging_hit_add"))

    assert statuses == dict.fromkeys(names, 200)
    assert topic_page.status_code == 200 and b"a-r00" in topic_page.content
    assert hit_add.status_code == 403


@pytest.mark.django_db
def test_campaign_create_rejects_an_amount_that_is_not_a_number():
    collection_with_grades({"1_1": graded_pool("a", 3)}, name="tiny")

    with pytest.raises(CommandError, match="'abc' is not an amount in USD"):
        run("campaign_create", "bad", "--collection", "tiny", "--pay", "abc")

    assert Campaign.objects.count() == 0


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--error-rate", "2"], r"--error-rate must be in \[0, 1\] \(got 2.0\)"),
        (["--workers", "0"], r"--workers must be at least 1 \(got 0\)"),
    ],
)
def test_campaign_simulate_rejects_bad_parameters_and_judges_nothing(oracle_file, arguments, message):
    collection_with_grades({"1_1": graded_pool("a", 6)}, name="tiny")
    run("campaign_create", "c", "--collection", "tiny")
    run("campaign_start", "c")
    before = campaign_progress(campaign=Campaign.objects.get())

    with pytest.raises(CommandError, match=message):
        run("campaign_simulate", "c", "--oracle", str(oracle_file), *arguments)

    assert campaign_progress(campaign=Campaign.objects.get()) == before


@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["judgments", "judgments_release", "workers", "llm_log"])
def test_campaign_export_writes_the_csv_exports_the_dashboard_gives(oracle_file, tmp_path, kind):
    from judging.services.exports import export_content

    collection_with_grades({"1_1": graded_pool("a", 12), "1_2": graded_pool("b", 4)}, name="tiny")
    run("campaign_create", "pilot", "--collection", "tiny", "--seed", "3")
    run("campaign_start", "pilot")
    run("campaign_simulate", "pilot", "--oracle", str(oracle_file))
    out = tmp_path / f"{kind}.csv"

    run("campaign_export", "pilot", "--kind", kind, "--out", str(out))

    expected = export_content(campaign=Campaign.objects.get(name="pilot"), kind=kind).decode()
    assert out.read_text() == expected and expected.count("\n") >= 1
    assert run("campaign_export", "pilot", "--kind", kind) == expected


@pytest.mark.django_db
def test_campaign_export_reports_an_unwritable_output(tmp_path):
    collection_with_grades({"1_1": graded_pool("a", 6)}, name="tiny")
    run("campaign_create", "c", "--collection", "tiny")
    target = tmp_path / "missing-directory" / "prefs.txt"

    with pytest.raises(CommandError, match=f"cannot write {target}: No such file or directory"):
        run("campaign_export", "c", "--out", str(target))

    assert not target.parent.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["-k", "0"], "k must be at least 1"),
        (["-k", "7"], "F > P > k"),
        (["--workers", "0"], "--workers must be at least 1"),
        (["--tournament-topic", "9_9"], "topic '9_9' has no graded judgments in demo"),
    ],
)
def test_demo_run_rejects_bad_arguments_before_replacing_earlier_demo_campaigns(arguments, message):
    collection = collection_with_grades({"1_1": graded_pool("a", 6)}, name="demo")
    run("campaign_create", "demo-crowd", "--collection", collection.name)

    with pytest.raises(CommandError, match=message):
        run("demo_run", *arguments)

    assert list(Campaign.objects.values_list("name", "status")) == [("demo-crowd", "draft")]


def _answer(assignment, oracle):
    from judging.models import HitSlot
    from judging.services import assignment_submit

    slots = HitSlot.objects.filter(hit_id=assignment.hit_id).values_list(
        "position", "topic__topic_id", "left_id", "left__docid", "right_id", "right__docid"
    )
    winners = {
        position: left_id if oracle.prefer(topic, left, right) == left else right_id
        for position, topic, left_id, left, right_id, right in slots
    }
    return assignment_submit(assignment=assignment, winners=winners)


@pytest.mark.django_db
def test_campaign_status_json_counts_judgments_hits_workers_and_spend(oracle_file):
    # Given a running campaign with HITs built, one of them judged by a worker later excluded, one published
    from django.utils import timezone

    from judging.models import Hit, Pair
    from judging.services import campaign_advance, hit_assign_next, worker_exclude, worker_get_or_create

    collection_with_grades({"1_1": graded_pool("a", 12), "1_2": graded_pool("b", 4)}, name="tiny")
    run("campaign_create", "st", "--collection", "tiny", "--seed", "3", "--budget", "100")
    run("campaign_start", "st")
    campaign = Campaign.objects.get()
    campaign_advance(campaign=campaign)
    worker = worker_get_or_create(provider="local", external_id="w1")
    _answer(hit_assign_next(campaign=campaign, worker=worker), PerfectOracle(read_qrels(oracle_file)))
    worker_exclude(worker=worker, reason="test")
    published = Hit.objects.filter(status="open").order_by("number").first()
    Hit.objects.filter(pk=published.pk).update(published_at=timezone.now(), reward_usd="1.50", fee_usd="0.30")

    status = json.loads(run("campaign_status", "st", "--json"))

    hits = Hit.objects.count()
    assert {
        key: status[key] for key in ("status", "topics_done", "topics_total", "tournament_judgments")
    } == {
        "status": "running",
        "topics_done": 0,
        "topics_total": 2,
        "tournament_judgments": 0,
    }
    assert status["judgments"] == Pair.objects.filter(winner__isnull=False).count() == 10
    assert status["answers"] == {"preferences": 10, "challenges": 3, "tournament": 0}
    assert status["hits"] == {"open": hits - 1, "accepted": 1, "discarded": 0, "expired": 0}
    assert (status["workers_active"], status["workers_excluded"], status["assessors_active"]) == (0, 1, 0)
    # 2.00 earned + 0.40 fee for the submitted HIT, 1.50 + 0.30 reserved for the published one
    assert status["spend_usd"] == 4.20 and status["publish_note"] == ""


@pytest.mark.django_db
def test_campaign_status_text_and_unknown_campaign():
    collection_with_grades({"1_1": graded_pool("a", 6)}, name="tiny")
    run("campaign_create", "c", "--collection", "tiny")

    text = run("campaign_status", "c")

    assert "campaign c (crowd, local): draft" in text and "topics: 0/0 done" in text
    assert "spend: 0.00 USD (no budget)" in text
    with pytest.raises(CommandError, match="no campaign named 'nope'") as error:
        run("campaign_status", "nope", "--json")
    assert error.value.returncode == 2


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--pay", "0", "--fee", "0", "--budget", "10"], "a budget needs a HIT that costs something"),
        (["--budget", "0"], "budget 0 USD allows no HIT"),
        (["--budget", "2"], r"budget 2 USD allows no HIT \(one HIT costs 2.40 USD"),
    ],
)
def test_campaign_create_refuses_a_budget_that_buys_no_hit_with_exit_2(arguments, message):
    collection_with_grades({"1_1": graded_pool("a", 6)}, name="tiny")

    with pytest.raises(CommandError, match=message) as error:
        run("campaign_create", "c7", "--collection", "tiny", *arguments)

    assert error.value.returncode == 2 and not Campaign.objects.exists()


@pytest.mark.django_db
def test_campaign_status_json_of_a_finished_tournament(oracle_file):
    from judging.models import TournamentJudgment
    from judging.services.simulated_crowd import tournament_simulate

    collection_with_grades({"1_1": graded_pool("a", 12), "1_2": graded_pool("b", 4)}, name="tiny")
    run("campaign_create", "t", "--collection", "tiny", "--mode", "tournament")
    run("campaign_start", "t")
    judged = tournament_simulate(
        campaign=Campaign.objects.get(), oracle=PerfectOracle(read_qrels(oracle_file))
    )

    status = json.loads(run("campaign_status", "t", "--json"))

    assert judged == TournamentJudgment.objects.count() > 0
    assert (status["status"], status["topics_done"], status["topics_total"]) == ("done", 2, 2)
    assert (status["judgments"], status["tournament_judgments"], status["assessors_active"]) == (0, judged, 1)
    assert status["answers"] == {"preferences": 0, "challenges": 0, "tournament": judged}
    assert status["hits"] == {"open": 0, "accepted": 0, "discarded": 0, "expired": 0}
    assert status["spend_usd"] == 0.0 and status["workers_excluded"] == 0


@pytest.mark.django_db
def test_the_readme_api_example_works_on_the_demo_database(settings, tmp_path):
    # Given the demo as `make demo` builds it (load, demo_run, runs_score, demo_superuser)
    from rest_framework.test import APIClient

    settings.MEDIA_ROOT = str(tmp_path / "media")
    demo_load(directory=DEMO_DIR)
    run("demo_run")
    run("runs_score", "demo-crowd")
    run("demo_superuser", "--password", "unused-in-this-test")
    # When the demo tutorial's example asks for the named user's token and the leaderboard
    readme = (DEMO_DIR.parent / "docs" / "tutorials" / "demo.md").read_text()
    username = re.search(r"TOKEN=\$\(toppref manage api_token (\w+)\)", readme).group(1)
    path = re.search(r"http://127\.0\.0\.1:8000(/api/\S+)", readme).group(1)
    token = run("api_token", username).strip()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    response = client.get(path)
    # Then the demo researcher owns the demo campaigns and gets the leaderboard
    assert response.status_code == 200, response.content
    assert response.json()["results"] and Campaign.objects.filter(owner__username=username).count() == 4
