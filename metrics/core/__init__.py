"""Pure evaluation core: numpy/scipy, plus pyarrow for reading and ordering runs at C speed (pandas only for
files with irregular whitespace and for --levels/--gains, imported there); no Django.

Public API in ``__all__``; each name is imported from its module on first use (PEP 562), so a command that needs
only the readers and compatibility does not pay for scipy.stats."""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    "EvaluationOptions": "metrics.core.evaluate",
    "MEASURES": "metrics.core.evaluate",
    "Measure": "metrics.core.evaluate",
    "MeasureFamily": "metrics.core.evaluate",
    "Ordering": "metrics.core.evaluate",
    "TopicScores": "metrics.core.evaluate",
    "evaluate_run": "metrics.core.evaluate",
    "evaluate_runs": "metrics.core.evaluate",
    "parse_measure": "metrics.core.evaluate",
    "register_measure": "metrics.core.evaluate",
    "score_matrix": "metrics.core.evaluate",
    "LeaderboardRow": "metrics.core.comparison",
    "MeasureResult": "metrics.core.comparison",
    "PREFERENCE_MEASURES": "metrics.core.comparison",
    "PreferenceMeasure": "metrics.core.comparison",
    "collect": "metrics.core.comparison",
    "compare": "metrics.core.comparison",
    "holm": "metrics.core.comparison",
    "leaderboard": "metrics.core.comparison",
    "leaderboard_tau": "metrics.core.comparison",
    "parse_measures": "metrics.core.comparison",
    "ranks": "metrics.core.comparison",
    "RunRename": "metrics.core.run_names",
    "describe_renames": "metrics.core.run_names",
    "distinct_run_names": "metrics.core.run_names",
    "combined_levels": "metrics.core.ideal",
    "ideal_positions": "metrics.core.ideal",
    "ideal_ranking": "metrics.core.ideal",
    "levels_from_values": "metrics.core.ideal",
    "map_gains": "metrics.core.ideal",
    "JUDGES": "metrics.core.judgment_errors",
    "JUDGE_SETTINGS": "metrics.core.judgment_errors",
    "JudgmentErrorInput": "metrics.core.judgment_errors",
    "Stability": "metrics.core.judgment_errors",
    "inclusion_probabilities": "metrics.core.judgment_errors",
    "judge_parameters": "metrics.core.judgment_errors",
    "judge_rates": "metrics.core.judgment_errors",
    "judgment_error_input": "metrics.core.judgment_errors",
    "judgment_error_stability": "metrics.core.judgment_errors",
    "meta_ap": "metrics.core.judgment_errors",
    "perturb_relevance": "metrics.core.judgment_errors",
    "document_positions": "metrics.core.lexiprecision",
    "lexiprecision": "metrics.core.lexiprecision",
    "lexiprecision_matrix": "metrics.core.lexiprecision",
    "lexiprecision_per_topic": "metrics.core.lexiprecision",
    "relevant_positions": "metrics.core.lexiprecision",
    "topic_positions": "metrics.core.lexiprecision",
    "ppref": "metrics.core.preference",
    "ppref_per_topic": "metrics.core.preference",
    "wpref": "metrics.core.preference",
    "wpref_per_topic": "metrics.core.preference",
    "Alignment": "metrics.core.ranking",
    "DOCID_ASCENDING": "metrics.core.ranking",
    "DOCID_DESCENDING": "metrics.core.ranking",
    "RankedRun": "metrics.core.ranking",
    "align": "metrics.core.ranking",
    "rank_run": "metrics.core.ranking",
    "P_PRESETS": "metrics.core.rbo",
    "compatibility": "metrics.core.rbo",
    "compatibility_of_ranking": "metrics.core.rbo",
    "ideal_rbo": "metrics.core.rbo",
    "rbo": "metrics.core.rbo",
    "Qrels": "metrics.core.readers",
    "Run": "metrics.core.readers",
    "TrecFormatError": "metrics.core.readers",
    "read_qrels": "metrics.core.readers",
    "read_run": "metrics.core.readers",
    "graded_rpp": "metrics.core.rpp",
    "mc4_scores": "metrics.core.rpp",
    "recall_level_weights": "metrics.core.rpp",
    "rpp": "metrics.core.rpp",
    "rpp_matrix": "metrics.core.rpp",
    "rpp_per_topic": "metrics.core.rpp",
    "bootstrap_ci": "metrics.core.significance",
    "kendall_tau": "metrics.core.significance",
    "pairwise_p_values": "metrics.core.significance",
    "preference_scores": "metrics.core.significance",
    "randomized_hsd": "metrics.core.significance",
    "randomized_hsd_scores": "metrics.core.significance",
    "score_differences": "metrics.core.significance",
    "sensitivity": "metrics.core.significance",
    "sign_test": "metrics.core.significance",
    "t_test": "metrics.core.significance",
    "average_precision": "metrics.core.trec",
    "expected_search_length": "metrics.core.trec",
    "ndcg": "metrics.core.trec",
    "precision": "metrics.core.trec",
    "rbp": "metrics.core.trec",
    "rbp_residual": "metrics.core.trec",
    "reciprocal_rank": "metrics.core.trec",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
