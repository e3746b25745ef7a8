"""How the commands that take a campaign name find it: names are unique per owner, so ``--owner`` picks one
when several owners use the name (the server's operator sees every campaign)."""

from __future__ import annotations

from django.core.management.base import CommandError

from judging.models import Campaign
from judging.selectors import CampaignNameAmbiguousError, campaign_get_named


def campaign_owner_argument(parser) -> None:
    parser.add_argument(
        "--owner",
        metavar="USERNAME",
        default=None,
        help="the owner of the campaign named (campaign names are unique per owner; needed only when "
        "several owners use the name; '' for a campaign without owner)",
    )


def campaign_for_command(name: str, owner: str | None, *, returncode: int = 1) -> Campaign:
    """The campaign ``name`` (of ``owner``), or a one-line ``CommandError``."""
    try:
        return campaign_get_named(name=name, owner=owner)
    except CampaignNameAmbiguousError as error:
        raise CommandError(str(error), returncode=returncode) from None
    except Campaign.DoesNotExist:
        of = "" if owner is None else f" of owner {owner!r}" if owner else " without owner"
        raise CommandError(f"no campaign named {name!r}{of}", returncode=returncode) from None
