from django.core.management.base import BaseCommand, CommandError

from judging.management.campaign_lookup import campaign_for_command, campaign_owner_argument
from judging.selectors import PREFERENCE_KINDS, campaign_qrels_lines
from judging.services.confidence import confidence_lines


class Command(BaseCommand):
    help = (
        "Write a campaign's preference qrels (topic Q0 docid value): combined, top_k or best; or, with --kind "
        "confidence, the judge model's topic<TAB>docid<TAB>p_top_k<TAB>p_best for every candidate "
        "(docs/judge-model.md)."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="campaign name")
        campaign_owner_argument(parser)
        parser.add_argument("--kind", choices=(*PREFERENCE_KINDS, "confidence"), default="combined")
        parser.add_argument("--out", default="-", help="output file (default: stdout)")

    def handle(self, *args, name, kind, out, owner, **options):
        campaign = campaign_for_command(name, owner)
        if kind == "confidence":
            lines = confidence_lines(campaign=campaign)
        else:
            lines = campaign_qrels_lines(campaign=campaign, kind=kind)
        if out == "-":
            for line in lines:
                self.stdout.write(line, ending="")
        else:
            try:
                with open(out, "w", encoding="utf-8") as file:
                    file.writelines(lines)
            except OSError as error:
                raise CommandError(f"cannot write {out}: {error.strerror}") from None
            self.stderr.write(f"{len(lines)} lines written to {out}")
