"""The authorization matrix (issue 15): every URL pattern of ``config.urls`` (walked from the resolver) asked
by an anonymous visitor, a crowd worker, an assessor, the owner of the objects in the URL, another researcher
and staff, with the expected status of each cell in ONE table (``MATRIX``). A URL pattern without a row fails
the suite, so a new URL gets its authorization decided when it is added.

The URL parameters are real objects of the owner (alice): her collection, her finished, draft and running
campaigns, a worker of hers, her ready export, a HIT of hers. Every cell runs in a savepoint rolled back after
it, so a POST (start, exclude, upload...) by one role never changes what the next role sees. Set
``TOPPREF_AUTHZ_PRINT=1`` to print the observed table (to review a change, never to paste blindly).
"""

from __future__ import annotations

import os
import re

import pytest
from django.contrib.auth.models import Group, User
from django.contrib.contenttypes.models import ContentType
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from judging.engine import PerfectOracle
from judging.models import Campaign, Export, Hit, Worker
from judging.services import campaign_create, campaign_pause, campaign_start, hit_build
from judging.services.simulated_crowd import campaign_simulate
from judging.services.tournaments import tournament_judgment_submit, tournament_next_pair
from metrics.leaderboard import campaign_runs_score, leaderboard_export_request
from pools.services import collection_copy, demo_load
from pools.trec import read_qrels
from tests.conftest import DEMO_DIR

ROLES = ("anonymous", "crowd", "assessor", "owner", "other", "staff")

# Shorthands for rows, in the order of ROLES.
PUBLIC = (200, 200, 200, 200, 200, 200)
# The researchers' API: 401 without credentials (Token first: "WWW-Authenticate: Token"), 403 for judges,
# 404 for another researcher's objects (their existence is not revealed), the owner and staff served.
API_OWNED = (401, 403, 403, 200, 404, 200)
API_ANY_RESEARCHER = (401, 403, 403, 200, 200, 200)
# The dashboard: anonymous visitors and judges go to the login page, another researcher gets 404.
DASH_OWNED = (302, 302, 302, 200, 404, 200)
DASH_ANY_RESEARCHER = (302, 302, 302, 200, 200, 200)
DASH_OWNED_POST = (302, 302, 302, 302, 404, 302)
# Django's admin: everyone but staff is sent to the admin's login page.
ADMIN = (302, 302, 302, 302, 302, 200)
ADMIN_READ_ONLY_ADD = (302, 302, 302, 302, 302, 403)

# (method, parameters, data, statuses). Parameters name the fixture's objects: "campaign" (alice's finished
# campaign) unless a row says "draft" or "live" for an action that needs that state.
ADMIN_MODELS = {
    # model route: statuses of (changelist, add, history, delete, change, object redirect)
    "auth/group": "group",
    "auth/user": "user",
    "authtoken/tokenproxy": "token",
    "pools/collection": "collection",
    "pools/topic": "topic",
    "pools/item": "item",
    "pools/gradedjudgment": "gradedjudgment",
    "pools/run": "run",
    "judging/campaign": "campaign",
    "judging/campaigntopic": "campaigntopic",
    "judging/round": "round",
    "judging/pair": "pair",
    "judging/hit": "hit",
    "judging/worker": "worker",
    "judging/assignment": "assignment",
    "judging/judgment": "judgment",
    "judging/tournamentjudgment": "tournamentjudgment",
    "metrics/runscore": "runscore",
    "axes/accessattempt": "accessattempt",
    "axes/accesslog": "accesslog",
    "axes/accessfailurelog": "accessfailurelog",
}
# Models whose admin is read-only (no add page for staff either: 403).
ADMIN_NO_ADD = {
    "pools/run",
    "judging/campaigntopic",
    "judging/round",
    "judging/pair",
    "judging/hit",
    "judging/worker",
    "judging/assignment",
    "judging/judgment",
    "judging/tournamentjudgment",
    "metrics/runscore",
    "axes/accessattempt",
    "axes/accesslog",
    "axes/accessfailurelog",
}
ADMIN_NO_DELETE = {
    "judging/campaign",  # only a draft campaign may be deleted (alice's finished one here)
    "judging/campaigntopic",
    "judging/round",
    "judging/pair",
    "judging/hit",
    "judging/worker",
    "judging/assignment",
    "judging/judgment",
    "judging/tournamentjudgment",
}

MATRIX: dict[str, tuple[str, dict, dict | None, tuple[int, ...]]] = {
    # --- the site, accounts -------------------------------------------------------------------------------
    "": ("GET", {}, None, PUBLIC),
    "healthz": ("GET", {}, None, PUBLIC),
    "accounts/login/": ("GET", {}, None, PUBLIC),
    "accounts/logout/": ("POST", {}, None, (302, 302, 302, 302, 302, 302)),
    # --- judges (local crowd and assessors) ----------------------------------------------------------------
    "judge/": ("GET", {}, None, (302, 200, 200, 200, 200, 200)),
    # Researchers and staff are no judges (403); the assessor gets the tournament pair waiting; a crowd worker
    # with no HIT in hand goes back to /judge/.
    "judge/next/": ("GET", {}, None, (302, 302, 200, 403, 403, 403)),
    "judge/answer/": ("POST", {}, {}, (302, 400, 400, 400, 400, 400)),
    # An undo names the judge's own answer (the service checks it); an empty one is not understood.
    "judge/undo/": ("POST", {}, {}, (302, 400, 400, 400, 400, 400)),
    "judge/instructions/": ("GET", {}, None, PUBLIC),
    # External HIT pages: the provider's parameters and the page's signed token are the credentials, never the
    # session, so every role gets the same: a Prolific entry without its parameters is a 400; a local
    # campaign's HIT has no external page (404); an answer or a submit without the token is refused (403).
    "hits/campaign/<uuid:public_id>/": ("GET", {"public_id": "prolific"}, None, (400,) * 6),
    "hits/<uuid:public_id>/": ("GET", {"public_id": "hit"}, None, (404,) * 6),
    "hits/<uuid:public_id>/answer/": ("POST", {"public_id": "hit"}, {}, (403,) * 6),
    "hits/<uuid:public_id>/submit/": ("POST", {"public_id": "hit"}, {}, (403,) * 6),
    # --- the admin ------------------------------------------------------------------------------------------
    "admin/": ("GET", {}, None, ADMIN),
    "admin/login/": ("GET", {}, None, (200, 200, 200, 200, 200, 302)),
    "admin/logout/": ("POST", {}, None, (302, 302, 302, 302, 302, 302)),
    "admin/password_change/": ("GET", {}, None, ADMIN),
    "admin/password_change/done/": ("GET", {}, None, ADMIN),
    "admin/autocomplete/": ("GET", {}, None, (302, 302, 302, 302, 302, 403)),
    "admin/jsi18n/": ("GET", {}, None, ADMIN),
    "admin/r/<path:content_type_id>/<path:object_id>/": (
        "GET",
        {"content_type_id": "campaign_type", "object_id": "campaign_pk"},
        None,
        ADMIN[:5] + (404,),
    ),
    "admin/auth/user/<id>/password/": ("GET", {"id": "user_pk"}, None, ADMIN),
    "admin/^(?P<app_label>auth|authtoken|pools|judging|metrics|axes)/$": ("GET", {}, None, ADMIN),
    "admin/(?P<url>.*)$": ("GET", {}, None, ADMIN[:5] + (404,)),
    **{
        key: value
        for model, fixture in ADMIN_MODELS.items()
        for key, value in {
            f"admin/{model}/": ("GET", {}, None, ADMIN),
            f"admin/{model}/add/": ("GET", {}, None, ADMIN_READ_ONLY_ADD if model in ADMIN_NO_ADD else ADMIN),
            f"admin/{model}/<path:object_id>/history/": ("GET", {"object_id": f"{fixture}_pk"}, None, ADMIN),
            f"admin/{model}/<path:object_id>/delete/": (
                "GET",
                {"object_id": f"{fixture}_pk"},
                None,
                ADMIN[:5] + ((403,) if model in ADMIN_NO_DELETE else (200,)),
            ),
            f"admin/{model}/<path:object_id>/change/": ("GET", {"object_id": f"{fixture}_pk"}, None, ADMIN),
            # the bare object URL redirects to its change page
            f"admin/{model}/<path:object_id>/": (
                "GET",
                {"object_id": f"{fixture}_pk"},
                None,
                ADMIN[:5] + (302,),
            ),
        }.items()
    },
    # --- the dashboard --------------------------------------------------------------------------------------
    "dashboard/": ("GET", {}, None, DASH_ANY_RESEARCHER),
    "dashboard/campaigns/new/": ("GET", {}, None, DASH_ANY_RESEARCHER),
    "dashboard/campaigns/<slug:name>/": ("GET", {"name": "campaign"}, None, DASH_OWNED),
    "dashboard/campaigns/<slug:name>/progress.json": ("GET", {"name": "campaign"}, None, DASH_OWNED),
    "dashboard/campaigns/<slug:name>/action/": (
        "POST",
        {"name": "live"},
        {"action": "pause"},
        DASH_OWNED_POST,
    ),
    "dashboard/campaigns/<slug:name>/exports/": (
        "POST",
        {"name": "campaign"},
        {"kind": "judgments"},
        DASH_OWNED_POST,
    ),
    "dashboard/campaigns/<slug:name>/runs/": (
        "POST",
        {"name": "campaign"},
        {"name": "matrix-run", "file": "run"},
        DASH_OWNED_POST,
    ),
    "dashboard/campaigns/<slug:name>/workers/": ("GET", {"name": "campaign"}, None, DASH_OWNED),
    "dashboard/campaigns/<slug:name>/leaderboard/": ("GET", {"name": "campaign"}, None, DASH_OWNED),
    "dashboard/campaigns/<slug:name>/leaderboard.csv": ("GET", {"name": "campaign"}, None, DASH_OWNED),
    "dashboard/campaigns/<slug:name>/plots/<str:figure>.png": (
        "GET",
        {"name": "campaign", "figure": "figure"},
        None,
        DASH_OWNED,
    ),
    "dashboard/campaigns/<slug:name>/plots/<str:figure>.svg": (
        "GET",
        {"name": "campaign", "figure": "figure"},
        None,
        DASH_OWNED,
    ),
    "dashboard/exports/<int:export_id>/download/": ("GET", {"export_id": "export_pk"}, None, DASH_OWNED),
    # --- the API: schema and docs (public: they describe the API, no data) --------------------------------
    "favicon.ico": ("GET", {}, None, (301, 301, 301, 301, 301, 301)),
    "api/schema/": ("GET", {}, None, PUBLIC),
    "api/docs/": ("GET", {}, None, PUBLIC),
    # --- the API: collections (readable and copied by every researcher; changed by the owner and staff only;
    # "free" is alice's collection that no campaign uses, so that the owner's change goes through) -----------
    "api/collections/": ("GET", {}, None, API_ANY_RESEARCHER),
    "api/collections/<slug:name>/topics/": (
        "POST",
        {"name": "free"},
        {"file": "topics"},
        (401, 403, 403, 200, 403, 200),
    ),
    "api/collections/<slug:name>/passages/": (
        "POST",
        {"name": "free"},
        {"file": "passages"},
        (401, 403, 403, 200, 403, 200),
    ),
    "api/collections/<slug:name>/qrels/": (
        "POST",
        {"name": "free"},
        {"file": "qrels"},
        (401, 403, 403, 200, 403, 200),
    ),
    "api/collections/<slug:name>/copy/": (
        "POST",
        {"name": "collection"},
        {"name": "matrix-copy"},
        (401, 403, 403, 201, 201, 201),
    ),
    # --- the API: campaigns ---------------------------------------------------------------------------------
    "api/campaigns/": ("GET", {}, None, API_ANY_RESEARCHER),
    "api/campaigns/<slug:name>/": ("GET", {"name": "campaign"}, None, API_OWNED),
    "api/campaigns/<slug:name>/start/": ("POST", {"name": "draft"}, None, API_OWNED),
    "api/campaigns/<slug:name>/pause/": ("POST", {"name": "live"}, None, API_OWNED),
    "api/campaigns/<slug:name>/resume/": ("POST", {"name": "paused"}, None, API_OWNED),
    "api/campaigns/<slug:name>/topics/": ("GET", {"name": "campaign"}, None, API_OWNED),
    "api/campaigns/<slug:name>/judgments/": ("GET", {"name": "campaign"}, None, API_OWNED),
    "api/campaigns/<slug:name>/workers/": ("GET", {"name": "campaign"}, None, API_OWNED),
    "api/campaigns/<slug:name>/workers/<int:worker_id>/exclude/": (
        "POST",
        {"name": "campaign", "worker_id": "worker_pk"},
        {"reason": "matrix"},
        API_OWNED,
    ),
    "api/campaigns/<slug:name>/rounds/": ("GET", {"name": "campaign"}, None, API_OWNED),
    "api/campaigns/<slug:name>/hits/": ("GET", {"name": "campaign"}, None, API_OWNED),
    "api/plan/": ("POST", {}, {"pool_size": 20, "trials": 2}, API_ANY_RESEARCHER),
    # --- the API: runs, leaderboard, exports ----------------------------------------------------------------
    "api/campaigns/<slug:name>/runs/": ("GET", {"name": "campaign"}, None, API_OWNED),
    "api/campaigns/<slug:name>/runs/score/": (
        "POST",
        {"name": "campaign"},
        None,
        (401, 403, 403, 202, 404, 202),
    ),
    "api/campaigns/<slug:name>/leaderboard/": ("GET", {"name": "campaign"}, None, API_OWNED),
    "api/campaigns/<slug:name>/exports/": ("GET", {"name": "campaign"}, None, API_OWNED),
    "api/exports/<int:export_id>/": ("GET", {"export_id": "export_pk"}, None, API_OWNED),
    "api/exports/<int:export_id>/download/": ("GET", {"export_id": "export_pk"}, None, API_OWNED),
}


def url_patterns() -> list[str]:
    """Every route of config.urls, as its full pattern string (unnamed ones included)."""

    def walk(patterns, prefix: str):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern))
            elif isinstance(pattern, URLPattern):
                yield prefix + str(pattern.pattern)

    return list(walk(get_resolver().url_patterns, ""))


# Routes written as regular expressions: the concrete path asked.
REGEX_PATHS = {
    "admin/^(?P<app_label>auth|authtoken|pools|judging|metrics|axes)/$": "admin/judging/",
    "admin/(?P<url>.*)$": "admin/no-such-page/",
}
FILES = {
    "topics": ("topics.tsv", b"d1\tWhat causes the seasons on Earth, and why?\n"),
    "passages": ("p.jsonl", b'{"id": "d1-p02", "text": "A corrected passage."}\n'),
    "qrels": ("qrels.txt", b"d1 0 matrix-new-doc 1\n"),
}


def _user(username: str, group: str | None = None, **extra) -> User:
    user = User.objects.create_user(username=username, password="pw-" + username, **extra)
    if group:
        Group.objects.get_or_create(name=group)[0].user_set.add(user)
    return user


@pytest.fixture
def world(db, settings, tmp_path, django_capture_on_commit_callbacks):
    """Users in every role and alice's objects: every kind of row the URLs name."""
    from axes.models import AccessAttempt, AccessFailureLog, AccessLog
    from rest_framework.authtoken.models import Token

    from judging.models import Assignment, CampaignTopic, Judgment, Pair, Round, TournamentJudgment
    from metrics.models import RunScore
    from pools.models import GradedJudgment, Item, Run, Topic

    settings.MEDIA_ROOT = str(tmp_path / "media")
    users = {
        "crowd": _user("dave", "crowd"),
        "assessor": _user("carol", "assessors"),
        "owner": _user("alice", "researchers"),
        "other": _user("bob", "researchers"),
        # Staff with every admin permission, as the operator's account is (``demo_superuser``).
        "staff": _user("erin", is_staff=True, is_superuser=True),
    }
    owner = users["owner"]
    collection = demo_load(directory=DEMO_DIR).collection
    collection.owner = owner
    collection.save(update_fields=["owner"])
    with django_capture_on_commit_callbacks(execute=True):
        done = campaign_start(
            campaign=campaign_create(collection=collection, name="alice-done", seed=3, owner=owner),
            topic_ids=["c1_1", "d11"],
        )
    with django_capture_on_commit_callbacks(execute=True):
        campaign_simulate(campaign=done, oracle=PerfectOracle(read_qrels(DEMO_DIR / "qrels.preference.txt")))
    campaign_runs_score(campaign=done)
    with django_capture_on_commit_callbacks(execute=True):
        export = leaderboard_export_request(campaign=done, kind="judgments", requested_by=owner)
    export.refresh_from_db()
    assert export.status == Export.Status.READY
    draft = campaign_create(collection=collection, name="alice-draft", seed=1, owner=owner)
    live = campaign_start(
        campaign=campaign_create(collection=collection, name="alice-live", seed=1, owner=owner),
        topic_ids=["d1"],
    )
    hit = Hit.objects.filter(campaign=live).first() or hit_build(campaign=live)[0]
    paused = campaign_pause(
        campaign=campaign_start(
            campaign=campaign_create(collection=collection, name="alice-paused", seed=1, owner=owner),
            topic_ids=["d2"],
        )
    )
    prolific = campaign_create(
        collection=collection, name="alice-prolific", seed=1, owner=owner, provider=Campaign.Provider.PROLIFIC
    )
    free = collection_copy(source=collection, name="alice-free", owner=owner)
    # One tournament answer, so that every admin page has a row to show.
    tournament = campaign_start(
        campaign=campaign_create(
            collection=collection, name="alice-tournament", seed=1, owner=owner, mode=Campaign.Mode.TOURNAMENT
        ),
        topic_ids=["d3"],
    )
    question = tournament_next_pair(campaign=tournament, assessor=users["assessor"])
    tournament_judgment_submit(
        campaign_topic=question.campaign_topic,
        assessor=users["assessor"],
        winner=question.left,
        loser=question.right,
    )
    # A campaign of bob's, so that "other" is a researcher with data of his own.
    campaign_create(collection=collection, name="bob-draft", seed=1, owner=users["other"])
    AccessAttempt.objects.create(username="x", ip_address="127.0.0.1", failures_since_start=1)
    AccessLog.objects.create(username="x", ip_address="127.0.0.1")
    AccessFailureLog.objects.create(username="x", ip_address="127.0.0.1")
    values = {
        "collection": collection.name,
        "free": free.name,
        "campaign": done.name,
        "draft": draft.name,
        "live": live.name,
        "paused": paused.name,
        "prolific": str(prolific.public_id),
        "hit": str(hit.public_id),
        "figure": "scatter",
        "worker_pk": Worker.objects.filter(assignments__campaign=done).first().pk,
        "export_pk": export.pk,
        "campaign_type": ContentType.objects.get_for_model(Campaign).pk,
        "campaign_pk": done.pk,
        "user_pk": owner.pk,
    }
    firsts = {
        "group": Group,
        "user": User,
        "token": Token,
        "collection": type(collection),
        "topic": Topic,
        "item": Item,
        "gradedjudgment": GradedJudgment,
        "run": Run,
        "campaign": Campaign,
        "campaigntopic": CampaignTopic,
        "round": Round,
        "pair": Pair,
        "hit": Hit,
        "worker": Worker,
        "assignment": Assignment,
        "judgment": Judgment,
        "tournamentjudgment": TournamentJudgment,
        "runscore": RunScore,
        "accessattempt": AccessAttempt,
        "accesslog": AccessLog,
        "accessfailurelog": AccessFailureLog,
    }
    Token.objects.get_or_create(user=owner)
    for key, model in firsts.items():
        values[f"{key}_pk"] = model.objects.order_by("pk").first().pk
    values["token_pk"] = owner.pk  # the admin's TokenProxy is addressed by its user
    return users, values


def _path(route: str, params: dict, values: dict) -> str:
    if route in REGEX_PATHS:
        return "/" + REGEX_PATHS[route]

    def fill(match: re.Match) -> str:
        return str(values[params[match.group(1)]])

    return "/" + re.sub(r"<(?:[a-z]+:)?([a-z_]+)>", fill, route)


def _data(data: dict | None, values: dict) -> dict | None:
    if data is None:
        return None
    filled = {}
    for key, value in data.items():
        if key == "file" and value in FILES:
            name, content = FILES[value]
            filled[key] = SimpleUploadedFile(name, content)
        elif key == "file" and value == "run":
            filled[key] = SimpleUploadedFile("run.txt", b"d1 Q0 d1-p02 1 2.0 tag\n")
        else:
            filled[key] = value
    return filled


def test_every_url_pattern_has_a_row_and_no_row_is_stale():
    routes = url_patterns()
    missing = [route for route in routes if route not in MATRIX]
    stale = [route for route in MATRIX if route not in routes]
    assert not missing, f"URL patterns without a row in MATRIX (decide who may use them): {missing}"
    assert not stale, f"rows of MATRIX for URL patterns that no longer exist: {stale}"


def test_authorization_matrix(world):
    users, values = world
    observed: dict[str, tuple[int, ...]] = {}
    wrong = []
    for route in url_patterns():
        if route not in MATRIX:
            continue
        method, params, data, expected = MATRIX[route]
        path = _path(route, params, values)
        statuses = []
        for role in ROLES:
            with transaction.atomic():
                client = Client()
                if role != "anonymous":
                    client.force_login(users[role])
                if method == "GET":
                    response = client.get(path)
                else:
                    response = client.post(path, _data(data, values) or {})
                statuses.append(response.status_code)
                transaction.set_rollback(True)
        observed[route] = tuple(statuses)
        if tuple(statuses) != expected:
            wrong.append(f"{method} {path} [{route}]: expected {expected}, got {tuple(statuses)}")
    if os.environ.get("TOPPREF_AUTHZ_PRINT"):
        for route, statuses in observed.items():
            print(f"{route!r}: {statuses},")
    assert not wrong, "cells that differ (roles: " + ", ".join(ROLES) + "):\n" + "\n".join(wrong)
