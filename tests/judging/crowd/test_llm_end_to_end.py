"""End to end through the commands, as an organiser runs it: the demo collection judged by a model alone
against the stand-in server (``campaign_create --provider llm``, ``campaign_start``, ``campaign_publish``,
which in the embedded default returns once the model has judged all it can), then a second identical
campaign that costs nothing. Real commits (``transaction=True``), so the rounds the model's HITs complete
close and the next rounds' HITs are built as they are in production."""

from __future__ import annotations

import json
import zlib
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command

from judging.models import Campaign, HitSlot, Judgment, LlmAnswer, LlmRequest
from judging.selectors import campaign_preferences
from pools.services import demo_load
from tests.conftest import DEMO_DIR
from tests.judging.crowd.fake_llm import FakeLlm, demo_oracle


def status(name: str) -> dict:
    out = StringIO()
    call_command("campaign_status", name, "--json", stdout=out)
    return json.loads(out.getvalue())


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_demo_collection_judged_by_the_model_alone_then_again_for_nothing(settings, tmp_path):
    demo_load(directory=DEMO_DIR)
    prompt = tmp_path / "prompt.txt"
    prompt.write_text(
        "Select the passage that answers the question better. Just answer 1 or 2.\n"
        "Question:\n{question}\nPassage 1:\n{passage_1}\nPassage 2:\n{passage_2}\n",
        encoding="utf-8",
    )
    with FakeLlm(oracle=demo_oracle(DEMO_DIR)) as fake:
        # Replies 0 to 30 ms late by question: they come back in another order than asked, as a loaded server's do
        fake.delay_of = lambda body: zlib.crc32(json.dumps(body["messages"]).encode()) % 7 * 0.005
        settings.TOPPREF_LLM_BASE_URL = fake.url
        for name in ("by-model", "again"):
            call_command(
                "campaign_create",
                name,
                "--collection",
                "demo",
                "--seed",
                "1",
                "--provider",
                "llm",
                "--llm-model",
                "stand-in-1",
                "--llm-prompt",
                str(prompt),
                "--llm-price-in",
                "2.50",
                "--llm-price-out",
                "10",
                "--llm-max-concurrency",
                "8",
                stdout=StringIO(),
            )
            call_command("campaign_start", name, stdout=StringIO())
            call_command("campaign_publish", name, stdout=StringIO(), stderr=StringIO())
            if name == "by-model":
                sent = len(fake.requests)

    first, again = (Campaign.objects.get(name=name) for name in ("by-model", "again"))
    assert first.status == again.status == Campaign.Status.DONE
    # Every pair (and challenge) of every HIT asked in both orders, each once.
    slots = HitSlot.objects.filter(hit__campaign=first).values_list("topic_id", "left_id", "right_id")
    questions = {q for t, a, b in slots for q in ((t, a, b), (t, b, a))}
    asked = set(LlmRequest.objects.filter(campaign=first).values_list("topic_id", "first_id", "second_id"))
    assert asked == questions and sent == fake.answered == len(questions)
    assert not Judgment.objects.filter(assignment__campaign=first).exclude(tie="").exists()
    # Cost = tokens x prices.
    report = status("by-model")["llm"]
    tokens_in = sum(LlmAnswer.objects.values_list("tokens_in", flat=True))
    tokens_out = sum(LlmAnswer.objects.values_list("tokens_out", flat=True))
    assert (report["requests"], report["tokens_in"], report["tokens_out"]) == (
        len(questions),
        tokens_in,
        tokens_out,
    )
    cost = (tokens_in * Decimal("2.50") + tokens_out * Decimal("10")) / 1_000_000
    assert report["cost_usd"] == pytest.approx(float(cost), abs=1e-6)
    assert status("by-model")["spend_usd"] == float(cost.quantize(Decimal("0.01")))
    # The second campaign: no request, no cost, the same preferences.
    assert len(fake.requests) == sent
    second = status("again")["llm"]
    assert second["requests"] == 0 and second["cost_usd"] == 0 and second["cached"] == len(questions)
    assert campaign_preferences(campaign=again) == campaign_preferences(campaign=first)
