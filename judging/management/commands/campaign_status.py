import json

from django.core.management.base import BaseCommand

from judging.management.campaign_lookup import campaign_for_command, campaign_owner_argument
from judging.selectors import campaign_progress
from judging.selectors.llm import campaign_llm_usage


class Command(BaseCommand):
    help = (
        "Show where a campaign stands: status, topics done, judgments (crowd and tournament), HITs by status, "
        "workers and assessors, spend. --json prints one JSON object for scripts."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="campaign name")
        campaign_owner_argument(parser)
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args, name, owner, **options):
        campaign = campaign_for_command(name, owner, returncode=2)
        progress = campaign_progress(campaign=campaign)
        llm = campaign_llm_usage(campaign=campaign)
        if options["json"]:
            self.stdout.write(json.dumps({"campaign": campaign.name} | progress.as_json() | {"llm": llm}))
            return
        budget = "no budget" if progress.budget_usd is None else f"budget {progress.budget_usd} USD"
        hits = ", ".join(f"{n} {status}" for status, n in progress.hits.items())
        lines = [
            f"campaign {campaign.name} ({campaign.mode}, {campaign.provider}): {progress.status}",
            f"topics: {progress.topics_done}/{progress.topics_total} done",
            f"judgments: {progress.judgments} crowd, {progress.tournament_judgments} tournament"
            + (
                ""
                if progress.max_judgments is None
                else f" (budget {progress.max_judgments}, wave {progress.waves}"
                + (
                    f"; the judge model chooses the rounds, which end by wave {progress.model_rounds})"
                    if progress.judge_model_rounds
                    else ")"
                )
            ),
            f"answers: {progress.answers['preferences']} preferences, {progress.answers['challenges']} challenges",
            f"pairs: {progress.pairs_queued} queued, {progress.pairs_in_hits} in HITs",
            f"HITs: {hits}",
            f"workers: {progress.workers_active} active, {progress.workers_excluded} excluded; "
            f"assessors: {progress.assessors_active} active",
            f"spend: {progress.spend_usd} USD ({budget})",
            f"awaiting confirmation: {progress.hits_awaiting_confirmation} HIT(s) submitted, "
            f"{progress.judgments_unconfirmed} unconfirmed answer(s) (stored, not counted)",
        ]
        if llm is not None:
            lines.append(
                f"model {llm['model']}: {llm['requests']} request(s), {llm['cached']} from the cache, "
                f"{llm['tokens_in']} tokens in, {llm['tokens_out']} out, {llm['cost_usd']:.4f} USD; "
                f"{llm['position_inconsistent']} position-inconsistent, {llm['failed']} failed"
            )
        if progress.publish_note:
            lines.append(f"publishing stopped: {progress.publish_note}")
        self.stdout.write("\n".join(lines))
