"""Accounts: ``user_add`` (password from TOPPREF_PASSWORD, else a prompt, else exit 2), the login page,
login rate limiting per account and address, and the demo judges."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.judging.pages_fixtures import PASSWORD, user_with_role


@pytest.mark.django_db
def test_user_add_creates_then_updates_a_user_in_the_role_group(monkeypatch):
    monkeypatch.setenv("TOPPREF_PASSWORD", "first-secret-1")
    call_command("user_add", "ann", "--role", "assessor", stdout=io.StringIO())
    monkeypatch.setenv("TOPPREF_PASSWORD", "second-secret-2")
    out = io.StringIO()
    call_command("user_add", "ann", "--role", "crowd", stdout=out)

    user = get_user_model().objects.get(username="ann")
    assert sorted(user.groups.values_list("name", flat=True)) == ["assessors", "crowd"]
    assert user.check_password("second-secret-2") and not user.is_staff
    assert out.getvalue() == "updated user ann with role crowd (group crowd)\n"


@pytest.mark.django_db
def test_user_add_without_password_or_terminal_exits_2_and_creates_nothing(monkeypatch):
    monkeypatch.delenv("TOPPREF_PASSWORD", raising=False)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))

    with pytest.raises(CommandError) as error:
        call_command("user_add", "ann", "--role", "assessor")

    assert error.value.returncode == 2 and "TOPPREF_PASSWORD" in str(error.value)
    assert not get_user_model().objects.filter(username="ann").exists()


def test_toppref_manage_user_add_exits_2_with_one_line_and_no_traceback(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "config.settings", "HOME": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-m", "config.cli", "manage", "user_add", "ann", "--role", "judge"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env=env,
        timeout=60,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "invalid choice: 'judge'" in result.stderr


@pytest.mark.django_db
def test_login_then_logout(client):
    user_with_role("ann", "assessors")
    response = client.post("/accounts/login/", {"username": "ann", "password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == "/judge/"
    assert client.get("/judge/").status_code == 200
    assert client.post("/accounts/logout/").status_code == 302
    assert client.get("/judge/").status_code == 302


@pytest.mark.django_db
def test_failed_logins_lock_the_account_from_that_address_and_say_when_to_retry(client, settings):
    settings.AXES_FAILURE_LIMIT = 3
    user_with_role("ann", "assessors")
    for _ in range(2):
        assert client.post("/accounts/login/", {"username": "ann", "password": "wrong"}).status_code == 200

    locked = client.post("/accounts/login/", {"username": "ann", "password": "wrong"})
    still_locked = client.post("/accounts/login/", {"username": "ann", "password": PASSWORD})
    other_address = client.post(
        "/accounts/login/", {"username": "ann", "password": PASSWORD}, REMOTE_ADDR="10.0.0.9"
    )

    assert locked.status_code == 429 and b"Try again in 15 minutes" in locked.content
    assert still_locked.status_code == 429
    assert other_address.status_code == 302


@pytest.mark.django_db
def test_a_session_of_either_model_backend_keeps_its_judge_and_a_wrong_password_counts_once(client, settings):
    from axes.models import AccessAttempt
    from django.contrib.auth import BACKEND_SESSION_KEY
    from django.test import Client

    # given a judge logged in through the page (the plain-SQL backend) and one whose session was made by
    # Django's own ModelBackend before it
    settings.AXES_FAILURE_LIMIT = 3
    user = user_with_role("ann", "assessors")
    assert client.post("/accounts/login/", {"username": "ann", "password": PASSWORD}).status_code == 302
    older = Client()
    older.force_login(user, backend="django.contrib.auth.backends.ModelBackend")

    # when both read a page, the judge's account is disabled, and someone tries a wrong password
    pages = [client.get("/judge/"), older.get("/judge/")]
    backend = client.session[BACKEND_SESSION_KEY]
    get_user_model().objects.filter(pk=user.pk).update(is_active=False)
    disabled = client.get("/judge/")
    Client().post("/accounts/login/", {"username": "ann", "password": "wrong"})

    # then both are the judge, a disabled account is logged out, and the failure is counted once
    assert backend == "config.auth.UserRowBackend"
    assert [page.status_code for page in pages] == [200, 200] and all(
        b"ann" in page.content for page in pages
    )
    assert disabled.status_code == 302
    assert AccessAttempt.objects.get(username="ann").failures_since_start == 1


@pytest.mark.django_db
def test_demo_judges_prints_both_logins_that_work(client):
    out = io.StringIO()
    call_command("demo_judges", "--password", "demo-pass-42", stdout=out)
    assert "assessor" in out.getvalue() and "crowd" in out.getvalue() and "demo-pass-42" in out.getvalue()
    assert (
        client.post("/accounts/login/", {"username": "crowd", "password": "demo-pass-42"}).status_code == 302
    )
    user = get_user_model().objects.get(username="assessor")
    assert list(user.groups.values_list("name", flat=True)) == ["assessors"]


@pytest.mark.django_db
def test_logins_without_a_request_are_not_rate_limited_but_still_checked(client):
    # the test client's login(), a shell or a command: no address to lock, the password still decides
    user_with_role("ann", "assessors")
    assert not client.login(username="ann", password="wrong")
    assert client.login(username="ann", password=PASSWORD)


@pytest.mark.django_db
@pytest.mark.parametrize("username", ["<script>", "a b", "x" * 151, "ann/../root"])
def test_user_add_refuses_a_username_django_would_refuse(monkeypatch, username):
    monkeypatch.setenv("TOPPREF_PASSWORD", "first-secret-1")
    with pytest.raises(CommandError) as error:
        call_command("user_add", username, "--role", "researcher", stdout=io.StringIO())
    assert error.value.returncode == 2 and "USERNAME" in str(error.value)
    assert "\n" not in str(error.value)
    assert not get_user_model().objects.exists()
