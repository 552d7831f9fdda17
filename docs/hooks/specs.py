"""MkDocs hook: every ``specs/*.md`` gets a page under Reference > Spec rules.

A spec with a hand-written page in ``docs/reference/specs/`` keeps it (and its
title in ``mkdocs.yml``); a spec without one gets a generated page holding only
the snippet line that includes it, and a nav entry. So a new spec file shows up
in the site without anyone editing the docs, and ``specs/`` stays the single
source of the rules.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
SECTION = "Spec rules"
PREFIX = "reference/specs/"


def _specs() -> list[Path]:
    return sorted((ROOT / "specs").glob("*.md"))


def _section(nav: Any) -> list[Any] | None:
    """The list of pages under the nav entry titled SECTION, wherever it is."""
    if isinstance(nav, list):
        for item in nav:
            found = _section(item)
            if found is not None:
                return found
    elif isinstance(nav, dict):
        for title, value in nav.items():
            if title == SECTION and isinstance(value, list):
                return value
            found = _section(value)
            if found is not None:
                return found
    return None


def _listed(entries: list[Any]) -> set[str]:
    paths = set()
    for entry in entries:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        if isinstance(value, str):
            paths.add(value)
    return paths


def on_config(config: Any) -> Any:
    section = _section(config["nav"])
    if section is None:
        return config
    listed = _listed(section)
    for spec in _specs():
        uri = PREFIX + spec.name
        if uri not in listed:
            section.append({spec.stem.replace("_", " ").capitalize(): uri})
    return config


def on_files(files: Files, config: Any) -> Files:
    for spec in _specs():
        uri = PREFIX + spec.name
        if files.get_file_from_path(uri) is None:
            files.append(File.generated(config, uri, content=f'--8<-- "specs/{spec.name}"\n'))
    return files
