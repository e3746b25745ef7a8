"""The prepared statements (judging/services/prepared.py) use Django's private compiler API: the Django release
they were checked against is the one requirements.lock pins and the one installed, and the private names they
use are there with the shapes they expect. A Django upgrade fails here, loudly, before it can change a row."""

import inspect
import re
from pathlib import Path

import django
import pytest
from django.db import connection
from django.db.models.query import get_related_populators
from django.db.models.sql import UpdateQuery

from judging.models import Assignment
from judging.services.prepared import DJANGO_VERIFIED

LOCK = Path(__file__).resolve().parents[2] / "requirements.lock"
RECHECK = (
    "judging/services/prepared.py relies on Django's private compiler API: run tests/judging/test_prepared.py"
    " on the new Django and, once it passes, set DJANGO_VERIFIED there"
)


def test_the_installed_and_the_locked_django_are_the_verified_one():
    locked = re.search(r"^django==(\S+)", LOCK.read_text(), flags=re.MULTILINE | re.IGNORECASE)

    assert locked is not None, "requirements.lock pins no Django"
    assert locked.group(1) == DJANGO_VERIFIED, f"requirements.lock pins Django {locked.group(1)}: {RECHECK}"
    assert django.get_version() == DJANGO_VERIFIED, f"Django {django.get_version()} is installed: {RECHECK}"


@pytest.mark.django_db
def test_the_private_names_prepared_statements_use_have_the_expected_shapes():
    compiler = Assignment.objects.select_related("worker").filter(pk=1).query.get_compiler(connection.alias)
    compiler.as_sql()
    update = Assignment.objects.filter(pk=1).query.chain(UpdateQuery)

    assert list(inspect.signature(get_related_populators).parameters) == ["klass_info", "select", "db"], (
        RECHECK
    )
    assert {"model", "select_fields", "related_klass_infos"} <= set(compiler.klass_info), RECHECK
    assert isinstance(compiler.select, list) and hasattr(compiler.select[0][0], "target"), RECHECK
    assert isinstance(compiler.annotation_col_map, dict) and isinstance(compiler.col_count, int), RECHECK
    assert callable(compiler.get_converters) and callable(update.add_update_values), RECHECK
