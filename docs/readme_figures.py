"""Regenerate every command output the README and the docs quote, so their figures cannot go stale.

    .venv/bin/python docs/readme_figures.py          # rewrite the generated regions (`make readme`)
    .venv/bin/python docs/readme_figures.py --check  # exit 1, naming each region, when one differs

The files are README.md and every page under docs/. A region (a block marked runnable) is the text between
``<!-- run: NAME -->`` and ``<!-- /run -->``. In a region that holds a code
block, every ``$ command`` line (with its ``\\`` continuations) is run in bash from the repository root, with
``.venv/bin`` first on PATH and ``CAST`` set to the CAsT 2019 data, and the lines after it (up to the next
command or the end of the block) are replaced by what it prints now (stdout, then stderr); ``keys=a,b;c,d``
after the name quotes only those keys of the JSON each command prints on stdout (floats rounded: 2 decimals from 1 up, 4 below);
``env=NAME=value,...`` runs the block's commands with those variables (what the page has its reader export). A region
without a code block is produced by the function of the same name below (tables and sentences that quote
figures). tests/config/test_readme.py runs ``--check`` (marked slow: about two minutes on the CAsT data).
Every other ``toppref`` command in a code block of these files is checked against the parsers by that test.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"


def documents() -> list[Path]:
    """The files whose runnable blocks are regenerated: the README and the docs' pages."""
    return [README, *sorted((REPO / "docs").rglob("*.md"))]


CAST = Path(os.environ.get("CAST", REPO.parent / "shared" / "data" / "cast2019"))
REGION = re.compile(r"<!-- run: (?P<name>[\w-]+)(?P<args>[^>]*?) -->\n(?P<body>.*?)<!-- /run -->", re.S)


# A file-only command (config/cli.py: it reads files and prints, no database) that reads no scratch file, redirects
# nothing and writes nothing prints the same for the same line, its seed included: it runs once per process
# however many regions quote it (the CAsT `toppref plan --trials 100` is quoted by a block and two sentences, each
# run taking most of a minute).
READ_ONLY = re.compile(r"toppref (plan|simulate|compare|evaluate|compat) [^|;&<>]*")
WRITES = re.compile(r"(^|\s)(-o|--out|--output)(\s|=|$)")
_printed: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[str, str]] = {}


def run(command: str, *, stderr: bool = False, extra_env: dict[str, str] | None = None) -> str:
    key = (command, tuple(sorted((extra_env or {}).items())))
    if key in _printed:
        out, err = _printed[key]
        return out + (err if stderr else "")
    env = dict(os.environ, CAST=str(CAST), PATH=f"{REPO / '.venv' / 'bin'}:{os.environ.get('PATH', '')}")
    env.update(extra_env or {})
    (REPO / "scratch").mkdir(exist_ok=True)
    done = subprocess.run(
        ["bash", "-c", command], cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"readme: `{command}` failed ({done.returncode}): {done.stderr.strip()}")
    if READ_ONLY.fullmatch(command) and not WRITES.search(command) and "scratch/" not in command:
        _printed[key] = (done.stdout, done.stderr)
    return done.stdout + (done.stderr if stderr else "")


def number(value: object) -> str:
    if isinstance(value, float):
        if value == 0 or abs(value) >= 1:
            return repr(round(value, 2))
        return repr(round(value, 4))
    return json.dumps(value)


def quoted_keys(output: str, keys: list[str], per_line: int = 5) -> list[str]:
    data = json.loads(output)
    items = [f'"{key}": {number(data[key])}' for key in keys]
    return [
        "  " + ", ".join(items[i : i + per_line]) + ("," if i + per_line < len(items) else "")
        for i in range(0, len(items), per_line)
    ]


def code_region(body: str, args: str) -> str:
    found = re.search(r"keys=([\w,@.;]+)", args)
    keys = found.group(1).split(";") if found else []  # one list per command, in order
    # env=NAME=value,NAME=value: the environment the page tells its reader to export before the block
    extra_env = (
        dict(item.split("=", 1) for item in re.findall(r"env=(\S+)", args)[0].split(","))
        if "env=" in args
        else {}
    )
    lines = body.split("\n")
    assert lines[0].startswith("```") and lines[-1] == "```", "a readme region holds one code block"
    out = [lines[0]]
    i = 1
    while i < len(lines) - 1:
        if not lines[i].startswith("$ "):
            i += 1  # an output line of the previous command: replaced below
            continue
        command = [lines[i]]
        # a command goes on after a trailing backslash or while a quote is open (the awk programs)
        while command[-1].endswith("\\") or "\n".join(command).count("'") % 2:
            i += 1
            command.append(lines[i])
        i += 1
        out.extend(command)
        quoted = keys.pop(0).split(",") if keys else None
        printed = run("\n".join(command)[2:], stderr=quoted is None, extra_env=extra_env)
        if quoted:
            out.extend(quoted_keys(printed, quoted))
        elif printed.strip():
            out.extend(printed.rstrip("\n").split("\n"))
    out.append(lines[-1])
    return "\n".join(out)


def _json(command: str) -> dict:
    return json.loads(run(command))


SIMULATE = "toppref simulate --qrels $CAST/qrels.graded.txt --oracle $CAST/qrels.preference.txt"


def tournament_table() -> str:
    rows = [
        "| k | candidates | `judgment_bound` (paper, Table 2) | extra over 29,350 graded | `judgments` (our tournament) |",
        "|---|---|---|---|---|",
    ]
    paper = {3: (3456, "+11.78%"), 5: (5429, "+18.50%"), 10: (10691, "+36.43%")}
    under = []
    for k in (3, 5, 10):
        result = _json(f"{SIMULATE} -k {k} --mode tournament --seed 1")
        bound = result["judgment_bound"]
        extra = f"+{100 * bound / 29350:.2f}%"
        rows.append(
            f"| {k} | {result['candidates']:,} | {bound:,} ({paper[k][0]:,}) | {extra} ({paper[k][1]}) | "
            f"{result['judgments']:,} |"
        )
        under.append(100 * (1 - result["judgments"] / bound))
    return "\n".join(rows) + (
        f'\n\nThe bounds agree exactly; the paper calls the bound "not tight", and our tournament stays '
        f"{min(under):.0f} to {max(under):.0f}% under it."
    )


def crowd_text() -> str:
    crowd = _json(f"{SIMULATE} -k 5 -F 9 -P 7 --mode crowd --seed 1")
    plan = _json("toppref plan --qrels $CAST/qrels.graded.txt -k 5 -F 9 -P 7 --trials 100 --seed 1")
    return (
        'The paper paid $3,879.60 for 15,349 judgments, "including some pilot judgments and HITs excluded by the\n'
        'challenge questions"; the released crowd log (`judgments.crowd.txt`) holds 14,573. Our '
        f"{crowd['judgments']:,} (one seed) and\n{plan['judgments']:,.0f} ± {plan['judgments_sd']:.0f} (100 seeds) "
        "have no pilot and no failed challenges, so they are the floor of that figure; the cost\nfollows from the "
        f"HIT count ({crowd['hits']:,} × $2.40 = ${crowd['cost_usd']:,.2f}). The same campaign run through the "
        "database\n(`benchmarks/pipeline.py`, same seed) makes the same judgments (tests/judging/test_pipeline.py "
        "checks it); its HIT\ncount differs, as the database packs the pairs into HITs as rounds open."
    )


def risk_text() -> str:
    plan = _json("toppref plan --pool-size 10 -k 5 -F 9 -P 7 --trials 5000 --seed 1")
    every = _json("toppref plan --qrels $CAST/qrels.graded.txt -k 5 -F 9 -P 7 --trials 100 --seed 1")
    return (
        "What each figure is. The paper's sentence is about one event, the fifth-best drawn against all four "
        "better\nanswers: with 7 opponents drawn from the 9 others its exact probability is C(5,3)/C(9,7) = 10/36 "
        '= 27.8%,\nwhich is indeed "more than 12%". `toppref plan` estimates two other figures by simulation '
        f"(5,000 trials):\n`p_miss` = {plan['p_miss']:.4f} ± {plan['p_miss_se']:.4f}, the chance that stage 1 "
        "culls at least one true top-5 answer (that event is one way;\nother draws cull others), and `p_lost` = "
        f"{plan['p_lost']:.4f} ± {plan['p_lost_se']:.4f}, the chance that a true top-5 answer is missing\n"
        "from the output once culled candidates are reinstated to keep at least k (docs/decisions.md). Earlier\n"
        "versions of this README read the paper's 12% as `p_lost`: one interpretation, not what the paper says\n"
        "(`../shared/notes/pipeline.md` section 4 A4 lists the readings we checked). Over all 173 CAsT pools, the\n"
        f"`toppref plan --qrels` command above gives `p_miss` {every['p_miss']:.3f} and `p_lost` "
        f"{every['p_lost']:.3f} per question."
    )


def compare_table() -> str:
    runs = "$CAST/runs/*.run"
    graded = _json(f"toppref compare $CAST/qrels.graded.txt {runs} -m ndcg@3 compat@0.8 --format json")
    combined = _json(f"toppref compare $CAST/qrels.preference.txt {runs} -m compat@0.8 --format json")

    def share(report: dict, measure: str) -> str:
        result = report["measures"][measure]
        return f"{100 * result['sensitivity']:.1f}% ({result['distinguished']}/{len(result['pairs'])})"

    tau = graded["kendall_tau"]["compat@0.8"]["ndcg@3"]
    return "\n".join(
        [
            "| measure | qrels | sensitivity, 23 runs | paper, 42 runs | Kendall's tau with graded NDCG@3 (paper) |",
            "|---|---|---|---|---|",
            f"| NDCG@3 | graded | {share(graded, 'ndcg@3')} | 71.7% | - |",
            f"| compatibility, p = 0.80 | graded | {share(graded, 'compat@0.8')} | 71.0% | {tau:.3f} (0.907) |",
            f"| compatibility, p = 0.80 | combined | {share(combined, 'compat@0.8')} | 76.5% | "
            "not printed by one command (0.851) |",
        ]
    )


GENERATED: dict[str, Callable[[], str]] = {
    "tournament-table": tournament_table,
    "crowd-text": crowd_text,
    "risk-text": risk_text,
    "compare-table": compare_table,
}


def regenerate(text: str) -> tuple[str, list[str]]:
    changed: list[str] = []

    def replace(match: re.Match) -> str:
        name, args, body = match["name"], match["args"], match["body"]
        if name in GENERATED:
            new = GENERATED[name]() + "\n"
        else:
            new = code_region(body.rstrip("\n"), args) + "\n"
        if new != body:
            changed.append(name)
        return f"<!-- run: {name}{args} -->\n{new}<!-- /run -->"

    return REGION.sub(replace, text), changed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when a region differs")
    args = parser.parse_args()
    stale = 0
    for path in documents():
        text = path.read_text()
        new, changed = regenerate(text)
        name = path.relative_to(REPO)
        stale += len(changed)
        if args.check:
            for region in changed:
                print(
                    f"{name}: region {region!r} differs from what its commands print now (run `make readme`)"
                )
        elif changed:
            path.write_text(new)
            print(f"{name}: {len(changed)} region(s) rewritten: {', '.join(changed)}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
