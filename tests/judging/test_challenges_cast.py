"""Challenges on all of TREC CAsT 2019, on both paths (``toppref simulate``'s engine and the database's
``hit_build``), by one rule (``challenge_nonrelevant``): a challenge's "non-relevant" passage is never graded
relevant for its own topic, even where a topic borrows its conversation's grade-0 passages (on the database
path, 29 of topic 31_3's 618 challenge passages used to be graded positive for 31_3); no HIT shows the same
non-relevant passage twice; and a non-relevant passage that is also a candidate somewhere is preferred, so
that challenge passages appear in ordinary pairs too (docs/decisions.md "Challenges")."""

from __future__ import annotations

from collections import Counter

import pytest

from judging.engine import challenge_nonrelevant
from judging.models import HitSlot
from judging.services import campaign_create, campaign_start, hit_build
from pools.services import collection_create, qrels_import
from pools.thinning import thin_qrels
from pools.trec import read_qrels


def test_the_engine_rule_never_offers_a_passage_the_topic_grades_relevant(cast_dir):
    graded = read_qrels(cast_dir / "qrels.graded.txt")
    pools = thin_qrels(graded, 5)
    shown = {docid for pool in pools.values() for docid in pool}

    offered = {topic: challenge_nonrelevant(topic, graded, shown=shown) for topic in pools}

    assert all(graded[topic].get(docid, 0) <= 0 for topic, docids in offered.items() for docid in docids)
    # the case of the report: 31_3 borrows from its conversation and grades some of those passages relevant
    borrowed = challenge_nonrelevant("31_3", graded)
    assert borrowed and not any(graded["31_3"].get(docid, 0) > 0 for docid in borrowed)


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.django_db
def test_database_challenges_are_fair_and_distinct_in_every_hit(cast_dir):
    graded = read_qrels(cast_dir / "qrels.graded.txt")
    collection = collection_create(name="cast", is_strict=False)
    qrels_import(collection=collection, path=cast_dir / "qrels.graded.txt")
    campaign = campaign_start(campaign=campaign_create(collection=collection, name="cast", seed=1))
    hit_build(campaign=campaign)  # a no-op where eager tasks built them at the start

    challenges = list(
        HitSlot.objects.filter(hit__campaign=campaign, is_challenge=True).values_list(
            "hit_id", "topic__topic_id", "left__docid", "right__docid", "expected_winner__docid"
        )
    )
    nonrelevant = [
        (hit, topic, right if expected == left else left) for hit, topic, left, right, expected in challenges
    ]

    assert len(challenges) > 300
    graded_relevant = [(topic, docid) for _, topic, docid in nonrelevant if graded[topic].get(docid, 0) > 0]
    assert graded_relevant == []
    assert all(count == 1 for count in Counter((hit, docid) for hit, _, docid in nonrelevant).values())
    candidates = {docid for pool in thin_qrels(graded, campaign.k).values() for docid in pool}
    in_ordinary_pairs = sum(1 for *_, docid in nonrelevant if docid in candidates)
    assert in_ordinary_pairs / len(nonrelevant) > 0.5
