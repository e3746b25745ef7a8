"""MkDocs hooks (mkdocs.yml `hooks:`): the generated pages of docs/generate.py join the build as virtual files,
so nothing generated is written into docs/ and a new flag, variable, measure, endpoint or decision appears in
the site by itself.

A nav entry that names a generated section's index (`reference/cli/index.md`, `decisions/index.md`) becomes
that section: the index, then every page generated under it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from mkdocs.structure.files import File, Files

_spec = importlib.util.spec_from_file_location(
    "toppref_docs_generate", Path(__file__).with_name("generate.py")
)
generate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate)

_pages: dict[str, str] = {}
_snippets: dict[str, str] = {}


def _title(path: str) -> str:
    first = _pages[path].split("\n", 1)[0]
    return first.removeprefix("# ").strip("`").strip() if first.startswith("# ") else Path(path).stem


def _expand(nav: list) -> list:
    expanded = []
    for entry in nav:
        if isinstance(entry, dict):
            ((title, value),) = entry.items()
            if isinstance(value, list):
                expanded.append({title: _expand(value)})
                continue
            if isinstance(value, str) and value.endswith("/index.md") and value in _pages:
                folder = value.removesuffix("index.md")
                children = [p for p in _pages if p.startswith(folder) and p.endswith(".md") and p != value]
                expanded.append({title: [value, *({_title(p): p} for p in children)]})
                continue
        expanded.append(entry)
    return expanded


def on_config(config, **kwargs):
    _pages.clear()
    _pages.update(generate.pages())
    _snippets.clear()
    _snippets.update(generate.snippets())
    if config.nav:
        config.nav = _expand(config.nav)
    return config


def on_files(files: Files, config, **kwargs) -> Files:
    for path, content in _pages.items():
        files.append(File.generated(config, path, content=content))
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    """A hand-written page includes a generated table with ``<!-- generated: NAME -->`` (docs/generate.py)."""
    for name, content in _snippets.items():
        markdown = markdown.replace(f"<!-- generated: {name} -->", content)
    return markdown
