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
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--preferences-per-hit", type=int, default=shape.preferences)
        parser.add_argument("--challenges-per-hit", type=int, default=shape.challenges)
        parser.add_argument(
            "--pay",
            type=usd,
            default=pricing.pay_per_hit,
            help=f"USD per HIT to the worker (default {pricing.pay_per_hit})",
        )
        parser.add_argument(
            "--provider",
            choices=Campaign.Provider.values,
            default=Campaign.Provider.LOCAL,
            help="crowd provider (default local)",
        )
        parser.add_argument(
            "--fee",
            type=usd,
            default=None,
            help=f"USD per HIT to the platform (default: the provider's fee on --pay; local {pricing.fee})",
        )
        parser.add_argument("--budget", type=usd, default=None, help="USD; must pay for at least one HIT")
        parser.add_argument("--owner", help="username of the researcher who owns the campaign")

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
        fee = options["fee"]
        if fee is None:
            fee = (
                Decimal("0.40")
                if options["provider"] == Campaign.Provider.LOCAL
                else crowd_fee_usd(options["provider"], reward_usd=options["pay"])
            )
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
                seed=options["seed"],
                preferences_per_hit=options["preferences_per_hit"],
                challenges_per_hit=options["challenges_per_hit"],
                pay_per_hit_usd=options["pay"],
                fee_per_hit_usd=fee,
                budget_usd=options["budget"],
                provider=options["provider"],
                owner=owner,
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
            + ("" if campaign.provider == Campaign.Provider.LOCAL else f" provider={campaign.provider}")
        )
