"""Logins at the rate of arrival: Argon2id with OWASP's parameters is the production hasher, and a password
stored with PBKDF2 (every account made before) still logs in and is rehashed with Argon2 on that login."""

import pytest
from django.conf import global_settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password

from config import settings as production_settings


@pytest.fixture
def production_hashers(settings):
    # the test settings hash with MD5 for speed; these tests are about the production list
    settings.PASSWORD_HASHERS = getattr(
        production_settings, "PASSWORD_HASHERS", global_settings.PASSWORD_HASHERS
    )
    return settings


def test_argon2id_with_owasp_parameters_is_the_default_hasher(production_hashers):
    encoded = make_password("a judge's password")

    assert encoded.startswith("argon2$argon2id$v=19$m=19456,t=2,p=1$")


@pytest.mark.django_db
def test_a_pbkdf2_password_logs_in_and_is_upgraded_to_argon2(production_hashers, client):
    # given an account whose password was stored with PBKDF2 (the hasher before Argon2)
    user = get_user_model().objects.create(
        username="ann", password=make_password("judge-pass-123", hasher="pbkdf2_sha256")
    )
    assert user.password.startswith("pbkdf2_sha256$")

    # when they log in through the login page, then log out and in again
    first = client.post("/accounts/login/", {"username": "ann", "password": "judge-pass-123"})
    client.post("/accounts/logout/")
    second = client.post("/accounts/login/", {"username": "ann", "password": "judge-pass-123"})

    # then both logins succeeded and the stored hash is now Argon2id
    user.refresh_from_db()
    assert first.status_code == 302 and second.status_code == 302
    assert user.password.startswith("argon2$argon2id$v=19$m=19456,t=2,p=1$")
    assert user.check_password("judge-pass-123") and not user.check_password("wrong")
