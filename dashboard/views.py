"""The researchers' dashboard: pages over the apps' selectors, actions through their services. Only
researchers (the ``researchers`` group) and staff get in (others are sent to the login page); a campaign
of another researcher is a 404. Each page makes a fixed number of queries whatever the campaign's size."""

from __future__ import annotations

from decimal import Decimal
from functools import wraps

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.http import FileResponse, Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from dashboard.forms import CampaignActionForm, CampaignCreateForm, ExportRequestForm, RunUploadForm
from judging import selectors
from judging.models import Campaign, Export
from judging.services import (
    CampaignConfigError,
    CampaignStateError,
    campaign_create,
    campaign_pause,
    campaign_publish_more,
    campaign_resume,
    campaign_start,
)
from judging.services.exports import ExportKindError
from metrics.core.legend import legend_entries, measure_label, measure_title, qrels_difference, relevance_note
from metrics.core.trec import DEFAULT_THRESHOLD
from metrics.leaderboard import (
    LEADERBOARD_MEASURES,
    QRELS,
    campaign_leaderboard,
    campaign_runs_score_request,
    leaderboard_csv,
    leaderboard_export_request,
)
from metrics.leaderboard_plots import FORMATS, interval_rows, plot_intervals, plot_scatter, scatter_points
from metrics.selectors import campaign_run_list
from metrics.uploads import RunUploadError, run_upload
from pools.selectors import collection_list_with_counts


def researcher_required(view):
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not selectors.user_is_researcher(user=request.user):
            return redirect_to_login(request.get_full_path())
        return view(request, *args, **kwargs)

    return wrapper


def _campaign(request, name: str) -> Campaign:
    """The caller's campaign ``name``; staff may name another owner's with ``?owner=USERNAME``."""
    try:
        return selectors.campaign_get_visible(user=request.user, name=name, owner=request.GET.get("owner"))
    except selectors.CampaignNameAmbiguousError as error:
        raise Http404(str(error)) from None
    except Campaign.DoesNotExist:
        raise Http404(f"no campaign named {name!r}") from None


def home(request):
    """The site's front page: the collections, and for a researcher their campaigns with their status."""
    campaigns = (
        _campaign_rows(selectors.campaign_list_visible(user=request.user))
        if selectors.user_is_researcher(user=request.user)
        else None
    )
    return render(
        request, "dashboard/home.html", {"collections": collection_list_with_counts(), "campaigns": campaigns}
    )


def _campaign_rows(campaigns):
    from django.db.models import Count, Q

    return campaigns.annotate(
        topics_total=Count("campaign_topics", distinct=True),
        topics_finished=Count(
            "campaign_topics",
            filter=Q(campaign_topics__state__in=["done", "nothing_to_judge"]),
            distinct=True,
        ),
    )


@researcher_required
def campaign_list(request):
    return render(
        request,
        "dashboard/campaign_list.html",
        {"campaigns": _campaign_rows(selectors.campaign_list_visible(user=request.user))},
    )


@researcher_required
def campaign_new(request):
    form = CampaignCreateForm(request.POST or None, owner=request.user)
    if request.method == "POST" and form.is_valid():
        data = dict(form.cleaned_data)
        try:
            campaign = campaign_create(owner=request.user, **data)
        except CampaignConfigError as error:
            form.add_error(None, str(error))
        else:
            messages.success(request, f"campaign {campaign.name} created (draft)")
            return redirect("dashboard:campaign", name=campaign.name)
    return render(request, "dashboard/campaign_new.html", {"form": form})


# Label and confirmation of each action button; which of them a campaign offers is judging's rule
# (``campaign_allowed_actions``), "score" is always offered.
ACTION_BUTTONS = {
    "start": ("Start", "Start the campaign: thin the pools and open the first rounds?"),
    "pause": ("Pause", "Pause: no new HITs are handed out or published. Continue?"),
    "publish": ("Publish more HITs", "Publish HITs for every queued pair (within the budget)?"),
    "resume": ("Resume", "Resume the campaign?"),
    "score": (
        "Score runs",
        "Score every ready run against this campaign's preferences and the graded qrels?",
    ),
}


def _action_buttons(campaign: Campaign) -> list[dict[str, str]]:
    names = [*selectors.campaign_allowed_actions(campaign=campaign), "score"]
    return [
        {"action": name, "label": ACTION_BUTTONS[name][0], "confirm": ACTION_BUTTONS[name][1]}
        for name in names
    ]


@researcher_required
def campaign_detail(request, name: str):
    campaign = _campaign(request, name)
    progress = selectors.campaign_progress(campaign=campaign)
    table = selectors.campaign_progress_table(campaign=campaign)
    forecast = selectors.campaign_forecast(campaign=campaign)
    context = {
        "campaign": campaign,
        "actions": _action_buttons(campaign),
        "progress": progress,
        "table": table,
        "percent": progress.percent,
        "spent_usd": progress.spend_usd,
        "forecast": forecast,
        "confidence": selectors.campaign_confidence(campaign=campaign),
        "forecast_total_usd": None if forecast is None else progress.spend_usd + forecast.cost_usd,
        "ties": selectors.campaign_ties_at_k(campaign=campaign),
        "adaptive_topics": selectors.campaign_adaptive_topics(campaign=campaign),
        "adaptive_crowd": selectors.campaign_adaptive_crowd(campaign=campaign),
        "triples": selectors.campaign_intransitive_triples(campaign=campaign),
        "top_k": selectors.campaign_top_k_with_text(campaign=campaign),
        "held": selectors.campaign_held_assignments(campaign=campaign),
        "idle_release_seconds": settings.TOPPREF_IDLE_RELEASE_SECONDS,
        "exports": list(Export.objects.filter(campaign=campaign)[:20]),
        "runs": list(campaign_run_list(campaign=campaign)),
        "export_form": ExportRequestForm(),
        "run_form": RunUploadForm(),
    }
    if campaign.has_llm:
        from judging.selectors.llm import campaign_judge_kinds, campaign_llm_usage

        context["llm"] = campaign_llm_usage(campaign=campaign)
        context["judge_kinds"] = campaign_judge_kinds(campaign=campaign)
    return render(request, "dashboard/campaign_detail.html", context)


@researcher_required
def campaign_progress_json(request, name: str):
    """What the page's refresh script polls: ``CampaignProgress.as_dict()`` (the figures of ``campaign_status
    --json`` and the API, money as "12.30"), the percent, each topic's state (``topics``: by topic here, the
    page's table; ``label`` is the state in words) and the runs' and exports' progress."""
    campaign = _campaign(request, name)
    progress = selectors.campaign_progress(campaign=campaign)
    table = selectors.campaign_progress_table(campaign=campaign)
    data = {
        key: f"{value:.2f}" if isinstance(value, Decimal) else value
        for key, value in progress.as_dict().items()
    }
    return JsonResponse(
        {
            **data,
            "percent": progress.percent,
            "topics": {
                row["topic"]: {
                    "state": row["state"],
                    "label": row["state_label"],
                    "round": row["round"],
                    "judged": row["pairs_judged"],
                }
                for row in table["topics"]
            },
            "runs": {
                name: {"status": status, "progress": run_progress, "error": error}
                for name, status, run_progress, error in campaign_run_list(campaign=campaign).values_list(
                    "name", "status", "progress", "error"
                )
            },
            "exports": {
                str(pk): {"status": status, "progress": export_progress}
                for pk, status, export_progress in Export.objects.filter(campaign=campaign).values_list(
                    "pk", "status", "progress"
                )[:20]
            },
        }
    )


ACTIONS = {
    "start": (campaign_start, "started"),
    "pause": (campaign_pause, "paused"),
    "resume": (campaign_resume, "resumed"),
    "publish": (campaign_publish_more, "HITs for the queued pairs are being published"),
    "score": (campaign_runs_score_request, "the runs are being scored"),
}


@researcher_required
@require_POST
def campaign_action(request, name: str):
    campaign = _campaign(request, name)
    form = CampaignActionForm(request.POST)
    if not form.is_valid():
        messages.error(request, "unknown action")
        return redirect("dashboard:campaign", name=name)
    service, done = ACTIONS[form.cleaned_data["action"]]
    try:
        result = service(campaign=campaign)
    except CampaignStateError as error:
        messages.error(request, str(error))
    else:
        messages.success(request, f"{campaign.name}: {done}")
        if getattr(result, "provider_message", ""):
            messages.warning(request, f"{campaign.name}: {result.provider_message}")
    return redirect("dashboard:campaign", name=name)


@researcher_required
@require_POST
def campaign_export(request, name: str):
    campaign = _campaign(request, name)
    form = ExportRequestForm(request.POST)
    if form.is_valid():
        try:
            export = leaderboard_export_request(
                campaign=campaign, kind=form.cleaned_data["kind"], requested_by=request.user
            )
        except ExportKindError as error:
            messages.error(request, str(error))
        else:
            messages.success(request, f"export {export.pk} ({export.kind}) requested")
    else:
        messages.error(request, "kind: choose an export kind")
    return redirect("dashboard:campaign", name=name)


@researcher_required
def export_download(request, export_id: int):
    export = (
        Export.objects.select_related("campaign")
        .filter(pk=export_id, campaign__in=selectors.campaign_list_visible(user=request.user))
        .first()
    )
    if export is None or export.status != Export.Status.READY or not export.file:
        raise Http404("no such export ready")
    filename = export.file.name.rsplit("/", 1)[-1]
    return FileResponse(export.file.open("rb"), as_attachment=True, filename=filename)


@researcher_required
@require_POST
def run_upload_view(request, name: str):
    campaign = _campaign(request, name)
    form = RunUploadForm(request.POST, request.FILES)
    if not form.is_valid():
        messages.error(request, "; ".join(f"{f}: {' '.join(e)}" for f, e in form.errors.items()))
    else:
        try:
            run = run_upload(
                campaign=campaign,
                name=form.cleaned_data["name"],
                upload=form.cleaned_data["file"],
                uploaded_by=request.user,
            )
        except RunUploadError as error:
            messages.error(request, str(error))
        else:
            messages.success(request, f"run {run.name} uploaded: validating")
    return redirect("dashboard:campaign", name=name)


WORKER_SORTS = (
    "worker",
    "hits_submitted",
    "challenge_pass_rate",
    "agreement",
    "reliability",
    "model_reliability",
    "left_rate",
    "median_seconds",
    "is_excluded",
)


@researcher_required
def campaign_workers(request, name: str):
    campaign = _campaign(request, name)
    sort = request.GET.get("sort", "agreement")
    sort = sort if sort in WORKER_SORTS else "agreement"
    descending = request.GET.get("dir", "asc") == "desc"
    rows = selectors.campaign_worker_table(campaign=campaign)
    # None (no data) sorts last either way
    present = sorted(
        (r for r in rows if r[sort] is not None), key=lambda r: (r[sort], r["worker"]), reverse=descending
    )
    rows = present + [r for r in rows if r[sort] is None]
    return render(
        request,
        "dashboard/campaign_workers.html",
        {"campaign": campaign, "rows": rows, "sort": sort, "descending": descending, "columns": WORKER_SORTS},
    )


def _measure_choice(text: str | None, default: tuple[str, str]) -> tuple[str, str]:
    measure, _, qrels = (text or "").partition(":")
    if measure in LEADERBOARD_MEASURES and qrels in ("preferences", "graded"):
        return measure, qrels
    return default


@researcher_required
def campaign_leaderboard_view(request, name: str):
    campaign = _campaign(request, name)
    baseline = request.GET.get("baseline") or None
    try:
        leaderboard = campaign_leaderboard(campaign=campaign, baseline=baseline)
    except ValueError:
        baseline = None
        leaderboard = campaign_leaderboard(campaign=campaign)
    measure, qrels = _measure_choice(request.GET.get("measure"), ("compat@0.95", "preferences"))
    x = _measure_choice(request.GET.get("x"), ("ndcg@10", "graded"))
    y = _measure_choice(request.GET.get("y"), ("compat@0.95", "preferences"))
    shown = [r for r in leaderboard["rows"] if r.measure == measure and r.qrels == qrels]
    choices = [(f"{m}:{q}", measure_label(m, q)) for q in QRELS for m in LEADERBOARD_MEASURES]
    families = [m.split("@")[0] for m in LEADERBOARD_MEASURES]
    return render(
        request,
        "dashboard/campaign_leaderboard.html",
        {
            "campaign": campaign,
            "rows": shown,
            "measure": measure,
            "qrels": qrels,
            "selected": f"{measure}:{qrels}",
            "selected_label": measure_label(measure, qrels),
            "choices": choices,
            "legend": legend_entries(LEADERBOARD_MEASURES),
            "relevance_note": relevance_note(families, DEFAULT_THRESHOLD),
            "qrels_difference": qrels_difference(),
            "tau": [(measure_title(m), m, t) for m, t in leaderboard["tau"].items()],
            "runs": leaderboard["runs"],
            "baseline": baseline,
            "x": ":".join(x),
            "y": ":".join(y),
            "x_label": measure_label(*x),
            "y_label": measure_label(*y),
            "scatter": scatter_points(leaderboard=leaderboard, x=x, y=y),
            "intervals": interval_rows(leaderboard=leaderboard, measure=measure, qrels=qrels),
        },
    )


@researcher_required
def campaign_leaderboard_csv(request, name: str):
    campaign = _campaign(request, name)
    content = leaderboard_csv(leaderboard=campaign_leaderboard(campaign=campaign))
    response = HttpResponse(content, content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="{campaign.name}-leaderboard.csv"'
    return response


# An SVG figure is a document of its own when opened from the page: matplotlib styles it with inline style
# attributes and it holds no script, so its policy allows those styles and nothing else.
SVG_POLICY = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"


@researcher_required
def campaign_plot(request, name: str, figure: str, format: str = "png"):
    """Figure 4 (``scatter``) or 9 (any other name) as SVG (the page's) or PNG (the download)."""
    campaign = _campaign(request, name)
    if figure == "scatter":
        x = _measure_choice(request.GET.get("x"), ("ndcg@10", "graded"))
        y = _measure_choice(request.GET.get("y"), ("compat@0.95", "preferences"))
        image = plot_scatter(campaign=campaign, x=x, y=y, format=format)
    else:
        measure, qrels = _measure_choice(request.GET.get("measure"), ("compat@0.95", "preferences"))
        image = plot_intervals(campaign=campaign, measure=measure, qrels=qrels, format=format)
    response = HttpResponse(image, content_type=FORMATS[format])
    response["Cache-Control"] = "private, max-age=60"
    if format == "svg":
        response["Content-Security-Policy"] = SVG_POLICY
    return response
