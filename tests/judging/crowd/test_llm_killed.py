"""A process judging with the model, killed (SIGKILL) in the middle of its calls, loses no stored answer, and
the next ``campaign_publish`` asks nothing that was answered and finishes the campaign: the commands run in
processes of their own on a SQLite file, against the stand-in server in this one."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import DEMO_DIR
from tests.judging.crowd.fake_llm import PROMPT, FakeLlm, demo_oracle

REPO_DIR = Path(__file__).resolve().parents[3]


def manage(env: dict, *args: str, **options) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args], env=env, cwd=REPO_DIR, capture_output=True, text=True, **options
    )


def stored_questions(database: Path) -> set[tuple[str, str, str]]:
    """(question, passage 1, passage 2) of every answer the campaign stored."""
    with sqlite3.connect(database) as connection:
        return set(
            connection.execute(
                "SELECT t.question, f.text, s.text FROM judging_llmrequest r"
                " JOIN pools_topic t ON t.id = r.topic_id JOIN pools_item f ON f.id = r.first_id"
                " JOIN pools_item s ON s.id = r.second_id"
            )
        )


def sent_questions(bodies: list[dict]) -> list[tuple[str, str, str]]:
    questions = []
    for body in bodies:
        match = PROMPT.search(body["messages"][-1]["content"])
        questions.append((match["question"], match["first"], match["second"]))
    return questions


@pytest.mark.slow
def test_a_process_killed_mid_call_loses_no_answer_and_the_next_asks_nothing_answered(tmp_path):
    database = tmp_path / "killed.sqlite3"
    env = os.environ | {
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": f"sqlite:///{database}",
        "TOPPREF_MEDIA_ROOT": str(tmp_path / "media"),
        "DJANGO_LOG_LEVEL": "WARNING",
    }
    env.pop("REDIS_URL", None)
    with FakeLlm(oracle=demo_oracle(DEMO_DIR), delay=0.05) as fake:
        env["TOPPREF_LLM_BASE_URL"] = fake.url
        for command in (
            ["migrate", "--verbosity", "0"],
            ["demo_load"],
            ["campaign_create", "killed", "--collection", "demo", "--seed", "1", "--provider", "llm"]
            + ["--llm-model", "stand-in", "--llm-max-concurrency", "4"],
            ["campaign_start", "killed"],
        ):
            result = manage(env, *command)
            assert result.returncode == 0, result.stderr

        judging = subprocess.Popen(
            [sys.executable, "manage.py", "campaign_publish", "killed"],
            env=env,
            cwd=REPO_DIR,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 120
        while fake.answered < 150 and time.monotonic() < deadline and judging.poll() is None:
            time.sleep(0.01)
        judging.send_signal(signal.SIGKILL)
        judging.wait()
        time.sleep(0.2)  # the calls under way when it died reach the stand-in and are answered to nobody
        assert judging.returncode == -signal.SIGKILL
        before = stored_questions(database)
        sent_before = sent_questions(fake.requests)
        assert 100 <= len(before) < len(sent_before) + 1

        result = manage(env, "campaign_publish", "killed")
        assert result.returncode == 0, result.stderr
        out = manage(env, "campaign_status", "killed", "--json")
        status = json.loads(out.stdout)

    sent_after = sent_questions(fake.requests[len(sent_before) :])
    # Nothing answered and stored was asked again; what was lost (calls under way at the kill, and replies
    # back but not stored yet) is asked once more, and only that.
    assert not set(sent_after) & before
    lost = set(sent_before) - before
    assert lost <= set(sent_after) and len(lost) < len(before) / 4
    assert status["status"] == "done"
    after = stored_questions(database)
    assert len(after) == len(set(sent_before) | set(sent_after)) == status["llm"]["requests"]
    assert len(sent_before) + len(sent_after) == len(after) + len(set(sent_before) - before)
