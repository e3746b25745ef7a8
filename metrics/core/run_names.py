"""Names for runs whose runids repeat: one rule for ``evaluate``, ``compat``, ``compare``, ``plot`` and the
leaderboard (docs/decisions.md, "One rule for repeated runids"). Standard library only, so the command line can
use it without loading the statistics."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RunRename:
    """A run shown under another name than its runid because another run uses the same runid."""

    path: str
    runid: str
    name: str


def distinct_run_names(
    runids: Sequence[str], paths: Sequence[str | Path]
) -> tuple[list[str], list[RunRename]]:
    """One name per run, unique: the runid; where several runs share a runid (the seven thunlp runs of TREC
    CAsT 2019 all say ``BERT-base``), each of them takes its file name without the extension, then the path as
    given, then the path with ``#2``, ``#3``... (the same file given twice). Returns the names and the renames
    in input order (docs/decisions.md, "One rule for repeated runids")."""
    if len(runids) != len(paths):
        raise ValueError(f"one path per run: {len(runids)} runids, {len(paths)} paths")
    names = list(runids)
    renames: list[RunRename] = []
    repeated = {runid for runid in runids if runids.count(runid) > 1}
    taken = {runid for runid in runids if runid not in repeated}
    for index, (runid, path) in enumerate(zip(runids, paths, strict=True)):
        if runid not in repeated:
            continue
        candidates = [_file_stem(path), str(path)]
        name = next((c for c in candidates if c and c not in taken), None)
        if name is None:
            number = 2
            while f"{path}#{number}" in taken:
                number += 1
            name = f"{path}#{number}"
        taken.add(name)
        names[index] = name
        renames.append(RunRename(path=str(path), runid=runid, name=name))
    return names, renames


def _file_stem(path: str | Path) -> str:
    """The file name without its extension (``.gz`` and then one more: ``thunlp1.run.gz`` -> ``thunlp1``)."""
    name = Path(path).name
    if name.endswith(".gz"):
        name = name[: -len(".gz")]
    return Path(name).stem or name


def describe_renames(renames: Sequence[RunRename]) -> str:
    """The renames of :func:`distinct_run_names` as one sentence, for a note on stderr:
    ``7 runs share runid 'BERT-base': named after their files: a, b, ...`` (groups joined by ``; ``)."""
    groups: dict[str, list[str]] = {}
    for rename in renames:
        groups.setdefault(rename.runid, []).append(rename.name)
    return "; ".join(
        f"{len(names)} runs share runid {runid!r}: named after their files: {', '.join(names)}"
        for runid, names in groups.items()
    )
