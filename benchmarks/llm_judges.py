"""A model beside people on TREC DL 2021 (``../shared/data/trecdl``, the data of Arabzadeh and Clarke,
"Benchmarking LLM-based Relevance Judgment Methods", SIGIR 2025): their published figures reproduced, then
human-only, model-only and hybrid judging of the 8,685 human-judged pairs compared.

1. Published figures (63 DL 2021 runs, Kendall's tau between run means of compat@0.9 on preference qrels and
   ndcg@10 on the NIST qrels): GPT-4o's full-procedure preference qrels 0.816; the NIST qrels themselves 0.916.
2. On the human-judged pairs, each row's answers become preference qrels, a passage's value being the votes it
   won. Rows:
   - ``human only``: the 11,681 human votes;
   - ``model only``: GPT-4o's answer per pair, asked in both orders (2 requests per pair it had the texts
     for); a tie (the orders disagreed) or no answer wins nothing. The file repeats GPT-4o's answer on every
     human vote's line and 371 pairs have lines that differ: the last is taken, which gives 5,093
     decisive and 1,649 tied pairs;
   - ``hybrid: ties to people``: the tie rule: the human votes where GPT-4o tied or had no answer;
   - ``hybrid: top first @ B``: ``judging.engine.routing.route_to_people`` with a budget of B of the human
     votes: people answer the pairs whose two passages the model puts highest, whatever it said;
   - ``hybrid: ties, top first @ 30%``: the same order restricted to the model's ties (is it the order or the
     ties that matter?).
   On a routed pair the human votes replace the model's answer. Columns: human votes used, model requests, how
   often the model's answers on the pairs it kept agree with a human vote (``toppref agreement``'s measure: all
   answers, then decisive ones only), Kendall's tau of the run ranking against the NIST qrels' (ndcg@10) and
   against the human-only ranking (compat@0.9), with a 95% interval of the latter over 1,000 resamples of the
   topics (seeded).

Usage: ``.venv/bin/python benchmarks/llm_judges.py [--data ../shared/data/trecdl/dl21] [--resamples 1000]``.
Prints tables; asserts nothing. About a minute (the topic resamples take most of it).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_DIR))

from judging.engine.judge_agreement import PairKey, log_agreement, pair_key  # noqa: E402
from judging.engine.judgment_log import read_votes  # noqa: E402
from judging.engine.routing import route_to_people, routing_order  # noqa: E402
from metrics.core.comparison import tau  # noqa: E402
from metrics.core.evaluate import evaluate_run, parse_measure, score_matrix  # noqa: E402
from metrics.core.readers import Qrels, Run, read_qrels, read_run  # noqa: E402

DEFAULT_DATA = REPO_DIR.parent / "shared" / "data" / "trecdl" / "dl21"
COMPAT, NDCG = parse_measure("compat@0.9"), parse_measure("ndcg@10")
BUDGETS = (0.1, 0.2, 0.25, 0.3, 0.4)
GOAL_BUDGET = 0.3
PUBLISHED = {"GPT-4o preference qrels": 0.816, "NIST qrels": 0.916}


@dataclass(frozen=True)
class Row:
    """One way of judging the human pairs, and how its run ranking compares."""

    name: str
    human_votes: int
    model_requests: int
    model_agreement: float | None
    model_agreement_decisive: float | None
    tau_nist: float
    tau_human: float
    tau_human_low: float
    tau_human_high: float
    resampled: tuple[float, ...] = ()


class Study:
    """The DL 2021 runs, qrels and logs, read once; ``scores`` gives the per-topic compat@0.9 of every run."""

    def __init__(self, data: Path, *, resamples: int = 1000, seed: int = 0) -> None:
        self.data = data
        self.runs: list[Run] = [read_run(path) for path in sorted((data / "runs").glob("*.run.gz"))]
        self.nist = read_qrels(data / "qrels.graded.txt")
        self.ndcg = self._means(self.nist, NDCG)
        self.people = read_votes(data / "judgments.human.txt").votes
        self.human: dict[PairKey, list[str]] = {}
        for vote in self.people:
            if vote.winner is not None:  # people's logs here have no ties; a tie would win nothing
                self.human.setdefault(pair_key(vote.topic, vote.a, vote.b), []).append(vote.winner)
        self.model_votes = read_votes(data / "judgments.gpt4o-on-human-pairs.txt").votes
        # One answer per pair: the last line's (module docstring); a pair with no usable line has None.
        self.model: dict[PairKey, str | None] = dict.fromkeys(self.human)
        answered: set[PairKey] = set()
        for vote in self.model_votes:
            key = pair_key(vote.topic, vote.a, vote.b)
            self.model[key] = vote.winner
            answered.add(key)
        self.answered = answered
        self.items = sorted({(topic, d) for topic, x, y in self.human for d in (x, y)})
        self.total_votes = sum(len(v) for v in self.human.values())
        rng = np.random.default_rng(seed)
        self.topics = sorted({topic for topic, _, _ in self.human})
        self.resamples = [rng.integers(0, len(self.topics), len(self.topics)) for _ in range(resamples)]
        self.human_scores = self.scores(self.wins(routed=self.human))

    def _means(self, qrels: Qrels, measure) -> np.ndarray:
        return np.array([evaluate_run(qrels, run, [measure])[0].mean for run in self.runs])

    def wins(self, *, routed: Iterable[PairKey]) -> Counter[tuple[str, str]]:
        """Votes won per passage: the human votes on the ``routed`` pairs, the model's decisive answer on the
        others."""
        routed = set(routed)
        won: Counter[tuple[str, str]] = Counter()
        for key, winner in self.model.items():
            if key in routed:
                won.update((key[0], w) for w in self.human[key])
            elif winner is not None:
                won[(key[0], winner)] += 1
        return won

    def scores(self, wins: Mapping[tuple[str, str], int]) -> np.ndarray:
        """compat@0.9 per run and topic (runs x ``self.topics``) on the preference qrels of ``wins``."""
        qrels = Qrels.from_records((topic, d, float(wins.get((topic, d), 0))) for topic, d in self.items)
        per_topic = [evaluate_run(qrels, run, [COMPAT])[0] for run in self.runs]
        _, topics, matrix = score_matrix(per_topic, COMPAT.name)
        # A topic no run was scored on (no passage won a vote) is a column of NaN: left out of every mean.
        columns = {topic: matrix[:, i] for i, topic in enumerate(topics)}
        missing = np.full(len(self.runs), np.nan)
        return np.stack([columns.get(topic, missing) for topic in self.topics], axis=1)

    def row(self, name: str, routed: Sequence[PairKey], *, uses_model: bool = True) -> Row:
        routed_set = set(routed)
        kept = [vote for vote in self.model_votes if pair_key(vote.topic, vote.a, vote.b) not in routed_set]
        agreement = log_agreement(kept, self.people) if uses_model else None
        matrix = self.scores(self.wins(routed=routed_set))
        means, human_means = np.nanmean(matrix, axis=1), np.nanmean(self.human_scores, axis=1)
        resampled = [
            tau(np.nanmean(matrix[:, sample], axis=1), np.nanmean(self.human_scores[:, sample], axis=1))
            for sample in self.resamples
        ]
        low, high = np.percentile(resampled, [2.5, 97.5]) if resampled else (np.nan, np.nan)
        model_pairs = len(self.answered) if uses_model else 0
        return Row(
            name=name,
            human_votes=sum(len(self.human[key]) for key in routed_set),
            model_requests=2 * model_pairs,
            model_agreement=None if agreement is None else agreement["agreement"],
            model_agreement_decisive=None if agreement is None else agreement["agreement_decisive"],
            tau_nist=tau(means, self.ndcg),
            tau_human=tau(means, human_means),
            tau_human_low=float(low),
            tau_human_high=float(high),
            resampled=tuple(resampled),
        )

    def published(self) -> dict[str, float]:
        return {
            "GPT-4o preference qrels": tau(
                self._means(read_qrels(self.data / "qrels.preference.gpt4o.txt"), COMPAT), self.ndcg
            ),
            "NIST qrels": tau(self._means(self.nist, COMPAT), self.ndcg),
        }

    def human_pair_agreement(self) -> float:
        """How often two human votes on the same pair agree (every two distinct votes of a pair, pairs with
        at least two votes, each combination counting once)."""
        agree = total = 0
        for winners in self.human.values():
            for i, first in enumerate(winners):
                for second in winners[i + 1 :]:
                    agree += first == second
                    total += 1
        return agree / total

    def rows(self, budgets: Sequence[float] = BUDGETS) -> list[Row]:
        cost = lambda key: len(self.human[key])  # noqa: E731 - the votes a routed pair takes
        undecided = {key: None for key, winner in self.model.items() if winner is None}
        rows = [
            self.row("human only", list(self.human), uses_model=False),
            self.row("model only", []),
            self.row("hybrid: ties to people", list(undecided)),
        ]
        for budget in budgets:
            routed = route_to_people(self.model, budget=budget * self.total_votes, cost=cost)
            rows.append(self.row(f"hybrid: top first @ {budget:.0%}", routed))
        ties_first = [key for key in routing_order(self.model) if key in undecided]
        spent, routed_ties = 0, []
        for key in ties_first:
            spent += cost(key)
            if spent > GOAL_BUDGET * self.total_votes:
                break
            routed_ties.append(key)
        rows.append(self.row(f"hybrid: ties, top first @ {GOAL_BUDGET:.0%}", routed_ties))
        return rows


def _number(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def print_tables(study: Study, rows: list[Row]) -> None:
    print(
        f"Published figures, {len(study.runs)} DL 2021 runs (compat@0.9 against ndcg@10 on the NIST qrels):"
    )
    print(f"  {'preference qrels':<26} {'tau':>6} {'published':>10}")
    for name, value in study.published().items():
        print(f"  {name:<26} {value:>6.3f} {PUBLISHED[name]:>10.3f}")
    print()
    print(
        f"DL 2021 human-judged pairs: {len(study.human):,} pairs, {study.total_votes:,} human votes; GPT-4o "
        f"answered {len(study.answered):,} pairs ({sum(w is not None for w in study.model.values()):,} decisive)."
    )
    header = (
        f"  {'row':<32} {'human votes':>15} {'model req.':>10} {'agree':>6} {'decisive':>8} "
        f"{'tau NIST':>8} {'tau human':>9} {'95% interval':>14}"
    )
    print(header)
    for row in rows:
        share = f"{row.human_votes:,} ({row.human_votes / study.total_votes:.0%})"
        print(
            f"  {row.name:<32} {share:>15} {row.model_requests:>10,} {_number(row.model_agreement):>6} "
            f"{_number(row.model_agreement_decisive):>8} {row.tau_nist:>8.3f} {row.tau_human:>9.3f} "
            f"{_number(row.tau_human_low)}-{_number(row.tau_human_high):>5}"
        )
    print(
        f"  (two human votes on the same pair agree {study.human_pair_agreement():.3f}; 'agree': the model's "
        "answers on the pairs it kept against the human votes, ties counting as disagreement)"
    )
    by_name = {row.name: row for row in rows}
    chosen = by_name[f"hybrid: top first @ {GOAL_BUDGET:.0%}"]
    print()
    print(
        f"Paired over the same topic resamples, {chosen.name} agrees with the human-only ranking better than:"
    )
    for other in ("model only", "hybrid: ties to people", f"hybrid: ties, top first @ {GOAL_BUDGET:.0%}"):
        wins = [a > b for a, b in zip(chosen.resampled, by_name[other].resampled, strict=True)]
        if wins:
            print(f"  {other:<32} in {np.mean(wins):.0%} of {len(wins):,} resamples")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the dl21 directory")
    parser.add_argument("--resamples", type=int, default=1000, help="topic resamples for the interval")
    args = parser.parse_args(argv)
    study = Study(args.data, resamples=args.resamples)
    print_tables(study, study.rows())
    return 0


if __name__ == "__main__":
    sys.exit(main())
