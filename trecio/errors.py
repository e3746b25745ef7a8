"""The one error every reader of toppref's input files raises."""

from __future__ import annotations

import os


class TrecFormatError(ValueError):
    """A file, or one line of it, that cannot be accepted.

    ``str()`` is ``"{path}:{line_number}: {problem}"``, or ``"{path}: {problem}"`` when the problem belongs to
    no single line (``line_number`` is then ``None``). Line numbers are 1-based and count blank lines, so they
    match what an editor shows."""

    def __init__(self, path: str | os.PathLike[str], line_number: int | None, problem: str) -> None:
        self.path = os.fspath(path)
        self.line_number = line_number
        self.problem = problem
        where = self.path if line_number is None else f"{self.path}:{line_number}"
        super().__init__(f"{where}: {problem}")
