import argparse
from decimal import Decimal, InvalidOperation

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from judging.crowd import fee_usd as crowd_fee_usd
from judging.engine import DEFAULT_ADAPTIVE_PARAMS, DEFAULT_HIT_SHAPE, DEFAULT_PARAMS, DEFAULT_PRICING
from judging.models import Campaign
from judging.selectors import user_is_researcher
from judging.services import CampaignConfigError, campaign_create
from pools.models import Collection


def usd(text: str) -> Decimal:
    """An amount in USD; argparse reports a non-number as a usage error (``Decimal`` alone would raise
    ``InvalidOperation``, which argparse does not catch)."""
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise argparse.ArgumentTypeError(f"{text!r} is not an amount in USD") from None
    if not value.is_finite():
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite amount in USD")
    return value


class Command(BaseCommand):
    help = (
        "Create a draft judging campaign over a collection (k, F, P, culling rule, HIT shape, pay, budget)."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="campaign name (a slug, unique per owner)")
        parser.add_argument("--collection", required=True, help="collection name")
        parser.add_argument("--mode", choices=Campaign.Mode.values, default=Campaign.Mode.CROWD)
        params, shape, pricing = DEFAULT_PARAMS, DEFAULT_HIT_SHAPE, DEFAULT_PRICING
        parser.add_argument("-k", type=int, default=params.k, help=f"depth of the top-k (default {params.k})")
        parser.add_argument(
            "-F",
            dest="final_stage_size",
            type=int,
            default=params.F,
            help=f"stage 2 from F candidates (default {params.F})",
        )
        parser.add_argument(
            "-P",
            dest="opponents",
            type=int,
            default=params.P,
            help=f"opponents per stage-1 round (default {params.P})",
        )
        parser.add_argument("--culling", choices=Campaign.Culling.values, default=params.culling)
        parser.add_argument("--max-rounds", type=int, default=params.max_rounds)
        adaptive = DEFAULT_ADAPTIVE_PARAMS
        parser.add_argument(
            "--max-votes",
            type=int,
            default=adaptive.max_votes,
            help=f"adaptive mode: votes a pair may get before it is a tie (default {adaptive.max_votes})",
        )
        parser.add_argument(
            "--confidence",
            type=float,
            default=adaptive.confidence,
            help="adaptive mode: the probability that a confirmed pair's order is right "
            f"(default {adaptive.confidence})",
        )
        parser.add_argument(
            "--max-judgments",
            type=int,
            default=None,
            help="adaptive mode: the judgment budget; judging stops at this many judgments and, once the crowd "
            "is seen to err on close pairs, the judge model chooses the rounds (docs/judge-model.md; default: none)",
        )
        parser.add_argument(
            "--model-rounds",
            type=int,
            default=None,
            help="with --max-judgments: the judge model's rounds end by this round, the budget spread over them "
            f"(default {adaptive.model_rounds}); more rounds buy quality with time, not judgments",
        )
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--preferences-per-hit", type=int, default=shape.preferences)
        parser.add_argument("--challenges-per-hit", type=int, default=shape.challenges)
        parser.add_argument(
            "--pay",
            type=usd,
            default=None,
            help=f"USD per HIT to the worker (default {pricing.pay_per_hit}; provider llm: 0)",
        )
        parser.add_argument(
            "--provider",
            choices=Campaign.Provider.values,
            default=Campaign.Provider.LOCAL,
            help="crowd provider (default local); llm: a language model judges alone",
        )
        parser.add_argument(
            "--fee",
            type=usd,
            default=None,
            help=f"USD per HIT to the platform (default: the provider's fee on --pay; local {pricing.fee})",
        )
        parser.add_argument("--budget", type=usd, default=None, help="USD; must pay for at least one HIT")
        parser.add_argument("--owner", help="username of the researcher who owns the campaign")
        llm = parser.add_argument_group(
            "language model (docs/llm-judges.md)",
            "the model at TOPPREF_LLM_BASE_URL (key TOPPREF_LLM_API_KEY) judges alone (--provider llm) or "
            "first, leaving the pairs it is unsure of to people (a human provider with --llm-model)",
        )
        llm.add_argument(
            "--llm-model", default="", help="the model's name at the server (e.g. gpt-4o, llama3.1)"
        )
        llm.add_argument(
            "--llm-prompt",
            type=argparse.FileType("r", encoding="utf-8"),
            default=None,
            help="prompt template file with {question}, {passage_1}, {passage_2} "
            "(default: Arabzadeh and Clarke's preference prompt, SIGIR 2025)",
        )
        llm.add_argument(
            "--llm-price-in", type=usd, default=Decimal("0"), help="USD per million prompt tokens"
        )
        llm.add_argument(
            "--llm-price-out", type=usd, default=Decimal("0"), help="USD per million completion tokens"
        )
        llm.add_argument(
            "--llm-max-concurrency", type=int, default=8, help="requests to the model at a time (default 8)"
        )

    def handle(self, *args, **options):
        collection = Collection.objects.current().filter(name=options["collection"]).first()
        if collection is None:
            raise CommandError(f"no collection named {options['collection']!r}")
        owner = None
        if options["owner"] is not None:
            owner = get_user_model().objects.filter(username=options["owner"]).first()
            if owner is None:
                raise CommandError(f"--owner: no user named {options['owner']!r}", returncode=2)
            if not user_is_researcher(user=owner):
                # An owner sees and steers the campaign through the researchers' pages and API, which only
                # researchers and staff may use.
                raise CommandError(
                    f"--owner: user {owner.username!r} is not a researcher (the researchers group) or staff",
                    returncode=2,
                )
        # Names are unique per owner: only the owner's own campaigns can be in the way.
        if Campaign.objects.filter(name=options["name"], owner=owner).exists():
            raise CommandError(f"a campaign named {options['name']!r} exists already")
        is_llm_only = options["provider"] == Campaign.Provider.LLM
        pay = options["pay"]
        if pay is None:
            pay = Decimal("0") if is_llm_only else DEFAULT_PRICING.pay_per_hit
        fee = options["fee"]
        if fee is None:
            fee = (
                Decimal("0")
                if is_llm_only
                else Decimal("0.40")
                if options["provider"] == Campaign.Provider.LOCAL
                else crowd_fee_usd(options["provider"], reward_usd=pay)
            )
        prompt = ""
        if options["llm_prompt"] is not None:
            with options["llm_prompt"] as handle:
                prompt = handle.read()
        try:
            campaign = campaign_create(
                collection=collection,
                name=options["name"],
                mode=options["mode"],
                k=options["k"],
                final_stage_size=options["final_stage_size"],
                opponents=options["opponents"],
                culling=options["culling"],
                max_rounds=options["max_rounds"],
                max_votes=options["max_votes"],
                confidence=options["confidence"],
                max_judgments=options["max_judgments"],
                model_rounds=options["model_rounds"],
                seed=options["seed"],
                preferences_per_hit=options["preferences_per_hit"],
                challenges_per_hit=options["challenges_per_hit"],
                pay_per_hit_usd=pay,
                fee_per_hit_usd=fee,
                budget_usd=options["budget"],
                provider=options["provider"],
                owner=owner,
                llm_model=options["llm_model"],
                llm_prompt=prompt,
                llm_price_in_usd=options["llm_price_in"],
                llm_price_out_usd=options["llm_price_out"],
                llm_max_concurrency=options["llm_max_concurrency"],
            )
        except CampaignConfigError as error:
            raise CommandError(str(error), returncode=2) from None
        self.stdout.write(
            f"campaign {campaign.name} ({campaign.mode}) over {collection.name}: k={campaign.k} "
            f"F={campaign.final_stage_size} P={campaign.opponents} culling={campaign.culling} seed={campaign.seed}"
            + (
                f" max_votes={campaign.max_votes} confidence={campaign.confidence}"
                if campaign.mode == Campaign.Mode.ADAPTIVE
                else ""
            )
            + (
                f" max_judgments={campaign.max_judgments} model_rounds={campaign.model_rounds}"
                if campaign.max_judgments is not None
                else ""
            )
            + ("" if campaign.provider == Campaign.Provider.LOCAL else f" provider={campaign.provider}")
            + (f" model={campaign.llm_model}" if campaign.has_llm else "")
        )
