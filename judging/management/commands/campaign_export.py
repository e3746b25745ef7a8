from django.core.management.base import BaseCommand, CommandError

from judging.management.campaign_lookup import campaign_for_command, campaign_owner_argument
from judging.models import Candidate
from judging.services.exports import JUDGING_EXPORT_KINDS, export_content


class Command(BaseCommand):
    help = (
        "Write one export of a campaign: its preference qrels (topic Q0 docid value: combined, top_k or best); "
        "the judge model's topic<TAB>docid<TAB>p_top_k<TAB>p_best for every candidate (confidence, "
        "docs/judge-model.md); or, as CSV, the judgment log (judgments, judgments_release), the workers table "
        "(workers) or a language model's answers (llm_log), the same files the dashboard and the API give."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="campaign name")
        campaign_owner_argument(parser)
        parser.add_argument("--kind", choices=JUDGING_EXPORT_KINDS, default="combined")
        parser.add_argument("--out", default="-", help="output file (default: stdout)")

    def handle(self, *args, name, kind, out, owner, **options):
        campaign = campaign_for_command(name, owner)
        if kind == "confidence" and not Candidate.objects.filter(campaign_topic__campaign=campaign).exists():
            raise CommandError(
                f"campaign {campaign.name} has no candidates yet (status {campaign.status}): "
                "its confidence exists once it has started"
            )
        text = export_content(campaign=campaign, kind=kind).decode("utf-8")
        if out == "-":
            self.stdout.write(text, ending="")
        else:
            try:
                with open(out, "w", encoding="utf-8") as file:
                    file.write(text)
            except OSError as error:
                raise CommandError(f"cannot write {out}: {error.strerror}") from None
            self.stderr.write(f"{text.count(chr(10))} lines written to {out}")
