"""The API's side of a campaign with a language model: created with its model, prompt, prices and concurrency
(alone with provider llm, or beside people), refused with the broken rule named; its detail carries ``llm``."""

from judging.models import Campaign


def test_a_researcher_creates_a_hybrid_campaign_and_a_model_only_one(api, demo_collection):
    hybrid = api.post(
        "/api/campaigns/",
        {
            "name": "hybrid",
            "collection": "demo",
            "provider": "local",
            "llm_model": "gpt-4o",
            "llm_price_in_usd": "2.50",
            "llm_price_out_usd": "10",
            "llm_max_concurrency": 4,
        },
        format="json",
    )
    alone = api.post(
        "/api/campaigns/",
        {
            "name": "alone",
            "collection": "demo",
            "provider": "llm",
            "llm_model": "llama3.1",
            "llm_prompt": "Q: {question}\n1: {passage_1}\n2: {passage_2}\nAnswer 1 or 2.",
            "pay_per_hit_usd": "0",
            "fee_per_hit_usd": "0",
        },
        format="json",
    )
    assert hybrid.status_code == alone.status_code == 201, (hybrid.json(), alone.json())
    campaign = Campaign.objects.get(name="hybrid")
    assert (campaign.provider, campaign.llm_model, campaign.llm_max_concurrency) == ("local", "gpt-4o", 4)
    assert str(campaign.llm_price_out_usd) == "10.0000"
    assert Campaign.objects.get(name="alone").has_people is False
    detail = api.get("/api/campaigns/hybrid/").json()
    assert detail["llm"] == {
        "model": "gpt-4o",
        "requests": 0,
        "cached": 0,
        "tokens_in": 0,
        "tokens_out": 0,
        "cost_usd": 0.0,
        "position_inconsistent": 0,
        "failed": 0,
    }
    assert api.get("/api/campaigns/alone/").json()["llm"]["model"] == "llama3.1"


def test_a_model_campaign_with_a_broken_prompt_or_no_model_is_refused_and_nothing_created(
    api, demo_collection
):
    broken = api.post(
        "/api/campaigns/",
        {"name": "x", "collection": "demo", "llm_model": "m", "llm_prompt": "{question} {passage_1}"},
        format="json",
    )
    nameless = api.post(
        "/api/campaigns/",
        {
            "name": "y",
            "collection": "demo",
            "provider": "llm",
            "pay_per_hit_usd": "0",
            "fee_per_hit_usd": "0",
        },
        format="json",
    )
    assert broken.status_code == 400 and "passage_2" in broken.json()["non_field_errors"][0]
    assert nameless.status_code == 400 and "needs a model" in nameless.json()["non_field_errors"][0]
    assert not Campaign.objects.filter(name__in=["x", "y"]).exists()
    assert api.get("/api/campaigns/").status_code == 200
