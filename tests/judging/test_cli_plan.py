import json
from math import comb, sqrt

from config.cli import main


def _plan(capsys, *arguments):
    status = main(["plan", *arguments])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_pool_of_ten_reports_the_hypergeometric_culling_risk(capsys):
    # "Assessing top-k preferences", section 4.3 ("12%"): 5th-best of 10 with 7 opponents each is culled with probability C(5,3)/C(9,7).
    trials = 1500
    status, stdout, _ = _plan(
        capsys, "--pool-size", "10", "-k", "5", "-F", "9", "-P", "7", "--trials", str(trials), "--seed", "5"
    )
    plan = json.loads(stdout)
    expected = comb(5, 3) / comb(9, 7)
    assert status == 0 and plan["pool_size"] == 10
    assert abs(plan["p_miss"] - expected) < 4 * sqrt(expected * (1 - expected) / trials)
    assert plan["kth_culled_in_round1_by_opponents"]["7"]["p_culled"] == plan["p_miss"]
    assert {"judgments", "hits", "cost_usd", "p_miss", "p_miss_se", "p_miss_by_rank", "p_lost"} <= set(plan)


def test_pool_of_ten_without_reinstatement_loses_with_that_probability(capsys):
    trials = 1500
    status, stdout, _ = _plan(
        capsys, "--pool-size", "10", "--trials", str(trials), "--seed", "5", "--no-reinstatement"
    )
    plan = json.loads(stdout)
    expected = comb(5, 3) / comb(9, 7)
    assert status == 0 and abs(plan["p_lost"] - expected) < 4 * sqrt(expected * (1 - expected) / trials)


def test_collection_plan_from_cast_qrels(cast_dir, capsys):
    status, stdout, _ = _plan(
        capsys, "--qrels", str(cast_dir / "qrels.graded.txt"), "--trials", "2", "--seed", "0"
    )
    plan = json.loads(stdout)
    assert status == 0
    assert (plan["topics"], plan["candidates"], plan["tournament_judgment_bound"]) == (173, 2673, 5429)
    assert len(plan["p_miss_per_topic"]) == 173
    assert abs(plan["judgments"] - 14573) / 14573 < 0.05


def test_plan_rejects_bad_parameters_and_files(tmp_path, capsys):
    status, stdout, stderr = _plan(capsys, "--pool-size", "10", "-k", "5", "-F", "9", "-P", "9")
    assert (status, stdout) == (2, "") and "F > P > k" in stderr
    status, _, stderr = _plan(capsys, "--trials", "3")
    assert status == 2 and "give --qrels or --pool-size" in stderr
    bad = tmp_path / "bad.txt"
    bad.write_text("t Q0 a high\n")
    status, _, stderr = _plan(capsys, "--qrels", str(bad))
    assert status == 1 and f"{bad}:1: grade 'high' is not a number" in stderr


def test_plan_explains_itself_on_stderr_and_keeps_json_on_stdout(capsys):
    # given the paper's setting: one pool of 10, k=5, F=9, P=7 (p_miss about 28%, p_lost about 11%)
    status, stdout, stderr = _plan(capsys, "--pool-size", "10", "--trials", "400", "--seed", "5")
    plan = json.loads(stdout)
    # then stderr says the same numbers in words, two lines
    assert status == 0
    lines = stderr.splitlines()
    assert len(lines) == 2
    assert lines[0] == (
        f"plan: 1 topic, 10 candidates, k=5 F=9 P=7 culling=half, 400 trials: about {plan['judgments']:,.0f} "
        f"judgments (sd {plan['judgments_sd']:,.0f}) in {plan['hits']:,.0f} HITs, costing about "
        f"${plan['cost_usd']:,.2f}."
    )
    miss, lost = f"{plan['p_miss']:.0%}", f"{plan['p_lost']:.0%}"
    assert (
        f"chance that stage 1 culls a true top-5 passage; after reinstatement about {lost} that one is missing"
        in (lines[1])
    )
    assert f" {miss} chance" in lines[1]


def test_plan_refuses_money_that_is_not_a_number_and_huge_pools(capsys):
    assert _plan(capsys, "--pool-size", "10", "--trials", "10", "--pay-per-hit", "nan")[0] == 2
    assert _plan(capsys, "--pool-size", "10", "--fee", "inf")[0] == 2
    status, stdout, stderr = _plan(capsys, "--pool-size", "100000000")
    assert (status, stdout) == (2, "")
    assert stderr == (
        "toppref plan: error: argument --pool-size: 100000000 is out of range: must be between 0 and 10000 "
        "(see 'toppref plan --help')\n"
    )


def test_plan_qrels_that_are_a_directory(tmp_path, capsys):
    status, stdout, stderr = _plan(capsys, "--qrels", str(tmp_path))
    assert (status, stdout, stderr) == (
        1,
        "",
        f"toppref plan: error: {tmp_path}: is a directory, not a file\n",
    )


def test_plan_refuses_what_the_api_refuses_with_the_same_bounds(capsys):
    # the 21 s case (a 48-regular pairing graph on 50 candidates) and too much Monte-Carlo work: exit 2
    # at once, with the engine's message (judging/engine/params.py, shared with POST /api/plan/)
    status, stdout, stderr = _plan(
        capsys, "--pool-size", "50", "-k", "47", "-P", "48", "-F", "49", "--trials", "1"
    )
    assert (status, stdout) == (2, "")
    assert stderr == "toppref plan: error: P must be between 1 and 16 (got 48)\n"
    status, stdout, stderr = _plan(capsys, "--pool-size", "10000", "-P", "16", "-F", "20", "--trials", "1000")
    assert (status, stdout) == (2, "")
    assert "judgments (at most 10,000,000)" in stderr


def test_adaptive_plan_forecasts_judgments_cost_and_a_risk_that_grows_with_noise(capsys):
    # Given one pool of 40, the adaptive plan with a consistent crowd never loses a top-5 item and costs fewer
    # judgments than the crowd plan; with a crowd erring 20% it needs more judgments and reports the risk.
    status, stdout, stderr = _plan(capsys, "--pool-size", "40", "--mode", "adaptive", "--trials", "20")
    clean = json.loads(stdout)
    assert status == 0 and clean["mode"] == "adaptive" and clean["p_lost"] == 0.0 == clean["p_miss"]
    assert "plan (adaptive)" in stderr and "judgments" in stderr
    _, crowd_out, _ = _plan(capsys, "--pool-size", "40", "--trials", "20")
    assert clean["judgments"] < json.loads(crowd_out)["judgments"]
    status, stdout, stderr = _plan(
        capsys, "--pool-size", "40", "--mode", "adaptive", "--trials", "20", "--error-rate", "0.2"
    )
    noisy = json.loads(stdout)
    assert status == 0 and noisy["judgments"] > clean["judgments"] and 0 <= noisy["p_lost"] <= 1
    assert {"hits", "cost_usd", "rounds", "pairs_tied", "p_lost_by_rank"} <= set(noisy)
    assert "erring 20%" in stderr


def test_a_noisy_crowd_plan_loses_more_and_the_adaptive_plan_sets_itself_beside_it(capsys):
    # Given one pool of 40, the paper's procedure planned for a crowd erring 20% of the time misses a true
    # top-5 item more often than for a consistent crowd, for about the same judgments (its rounds are fixed).
    _, clean_out, _ = _plan(capsys, "--pool-size", "40", "--trials", "20")
    status, noisy_out, stderr = _plan(capsys, "--pool-size", "40", "--trials", "20", "--error-rate", "0.2")
    clean, noisy = json.loads(clean_out), json.loads(noisy_out)
    assert status == 0 and (clean["error_rate"], noisy["error_rate"]) == (0.0, 0.2)
    assert noisy["p_lost"] > clean["p_lost"]
    assert abs(noisy["judgments"] - clean["judgments"]) < 0.1 * clean["judgments"]
    # The adaptive plan for the same crowd carries that crowd plan's figures and says, in words, which mode
    # gives more for less when one does.
    status, stdout, stderr = _plan(
        capsys, "--pool-size", "40", "--mode", "adaptive", "--trials", "20", "--error-rate", "0.2"
    )
    adaptive = json.loads(stdout)
    assert status == 0
    assert {name: adaptive["crowd"][name] for name in ("judgments", "p_lost")} == {
        name: noisy[name] for name in ("judgments", "p_lost")
    }
    assert "The paper's procedure (--mode crowd) on the same pools and crowd" in stderr
    _, stdout, stderr = _plan(capsys, "--pool-size", "40", "--mode", "adaptive", "--trials", "20")
    # with a consistent crowd the adaptive mode costs less and loses nothing
    assert json.loads(stdout)["crowd"]["judgments"] > json.loads(stdout)["judgments"]
    assert stderr.rstrip().endswith("the adaptive mode is the better buy.")


def test_jobs_run_the_trials_in_processes_for_the_same_plan(capsys):
    arguments = (
        "--pool-size",
        "12",
        "--mode",
        "adaptive",
        "--error-rate",
        "0.1",
        "--trials",
        "6",
        "--seed",
        "2",
    )
    status, one, _ = _plan(capsys, *arguments)
    status_jobs, two, _ = _plan(capsys, *arguments, "--jobs", "2")
    assert status == status_jobs == 0 and json.loads(one) == json.loads(two)
    status, _, stderr = _plan(capsys, *arguments, "-j", "0")
    assert status == 2 and "--jobs" in stderr
