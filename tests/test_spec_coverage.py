"""Every rule ID in specs/ is cited by at least one test: a rule with no test is a hole."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RULE_ID = re.compile(r"\b[A-Z]{1,8}(?:-[A-Z]{1,8})*-[0-9]+[a-z]?\b")


def spec_rule_ids() -> dict[str, str]:
    ids: dict[str, str] = {}
    for spec in sorted((ROOT / "specs").glob("*.md")):
        for rule in RULE_ID.findall(spec.read_text(encoding="utf-8")):
            ids.setdefault(rule, spec.name)
    return ids


def cited_text() -> str:
    here = Path(__file__).resolve()
    return "\n".join(
        p.read_text(encoding="utf-8")
        for p in (ROOT / "tests").rglob("*.py")
        if p.resolve() != here
    )


def test_specs_have_rules():
    ids = spec_rule_ids()
    assert len(ids) > 50, sorted(ids)


def test_every_spec_rule_is_cited_by_a_test():
    ids = spec_rule_ids()
    text = cited_text()
    holes = sorted(f"{rule} ({spec})" for rule, spec in ids.items()
                   if not re.search(rf"(?<![\w-]){re.escape(rule)}(?![\w])", text))
    assert not holes, f"{len(holes)} spec rule(s) cited by no test: " + ", ".join(holes)
