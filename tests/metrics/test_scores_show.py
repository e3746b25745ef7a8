"""``manage.py scores_show``: the table of a campaign's stored scores beside the graded ones."""

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from metrics.models import RunScore
from pools.services import run_import
from tests.judging.factories import CampaignFactory, collection_with_grades

GRADES = {"t1": {"a": 2, "b": 1, "c": 0}, "t2": {"d": 1, "e": 0}}
# Hand-checked RR: good finds a (t1) and d (t2) first; poor finds b at rank 2 (t1) and d at rank 2 (t2).
RUNS = {
    "good": "t1 Q0 a 1 3.0 good\nt1 Q0 c 2 2.0 good\nt1 Q0 b 3 1.0 good\nt2 Q0 d 1 1.0 good\n",
    "poor": "t1 Q0 c 1 2.0 poor\nt1 Q0 b 2 1.0 poor\nt2 Q0 e 1 2.0 poor\nt2 Q0 d 2 1.0 poor\n",
}


@pytest.fixture
def campaign(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    collection = collection_with_grades(GRADES)
    for name, text in RUNS.items():
        path = Path(tmp_path) / f"{name}.run"
        path.write_text(text)
        run_import(collection=collection, path=path)
    # a campaign with no finished topic: its combined qrels are the grades themselves
    return CampaignFactory(collection=collection, name="shown")


def _show(*argv):
    out = StringIO()
    call_command("scores_show", *argv, stdout=out)
    return out.getvalue().splitlines()


@pytest.mark.django_db
def test_scores_show_computes_missing_scores_under_canonical_names(campaign):
    # when asked with a non-canonical spelling
    lines = _show("shown", "-m", "RR", "p@1")
    # then both tables hold the hand-checked means, best first, under the canonical names
    rows = [
        f"{'run':<16}{'rr':>12}{'p@1':>12}",
        "-" * 40,
        f"{'good':<16}{1.0:>12.4f}{1.0:>12.4f}",
        f"{'poor':<16}{0.5:>12.4f}{0.0:>12.4f}",
    ]
    header = lines.index(rows[0])
    assert lines[:2] == [
        "",
        "Runs scored against campaign shown's combined preference qrels (the campaign's top-k above the grades):",
    ]
    # a legend names every column before the first table
    assert " ".join(lines[2:header]) == (
        "Columns: each run's mean over 2 topics, best first; rr = reciprocal rank (1 / the rank of the first "
        "relevant passage); p@k = precision (the share of relevant passages in the top k); rr and p count a "
        "value of 1 or more as relevant."
    )
    assert lines[header : header + 11] == [
        *rows,
        "",
        "The same runs against the graded qrels (grades only):",
        *rows,
        "",
    ]
    # and one sentence says what tells the two tables apart
    assert " ".join(lines[header + 11 :]).startswith("The difference: the graded qrels treat every passage")
    # one row per run, measure and qrels kind
    assert sorted(RunScore.objects.values_list("qrels_kind", "measure")) == sorted(
        [(kind, measure) for kind in ("combined", "graded") for measure in ("rr", "p@1")] * 2
    )
    # and a second call finds them stored instead of computing them again
    stored = sorted(RunScore.objects.values_list("pk", flat=True))
    assert _show("shown", "-m", "rr", "p@1") == lines
    assert sorted(RunScore.objects.values_list("pk", flat=True)) == stored


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("argv", "message"),
    [(["shown", "-m", "nope@3"], "unknown measure 'nope'"), (["absent"], "no campaign named 'absent'")],
)
def test_scores_show_bad_input_is_a_command_error_that_stores_nothing(campaign, argv, message):
    with pytest.raises(CommandError, match=message):
        _show(*argv)
    assert RunScore.objects.count() == 0
