"""``coordkit verify``: every reference primitive checked over all interleavings of small
configurations (FORMAL-20..29, ``specs/formal.md``; the table is ``specs/verification.md``).

A configuration is data (``Configuration``): a primitive's factory and
arguments, one list of calls per thread, the pure model its history must be
linearizable against, and the rules checked at the end of every run.  DPOR at
sync granularity explores it until exhausted (``verify_row``); a mutant run
swaps the factory and nothing else (``Configuration.with_factory``).

This package sits above both the primitives and the engine (ENGINE-4,
``tests/test_layers.py``).

* ``program``: ``Configuration``, ``Op``, the recorder and the explored program;
* ``queues``, ``coordinator``, ``runner``: the rows of each primitive;
* ``table``: running rows and showing the table; ``document``: the Markdown file.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

from coordkit.verify.program import Configuration, Op, Trial
from coordkit.verify.table import PROFILES, TABLE, Budget, RowResult, rows, text, verify_row

__all__ = ["PROFILES", "TABLE", "Budget", "Configuration", "Op", "RowResult", "Trial", "add_arguments",
           "main", "rows", "run", "verify_row"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``coordkit verify`` and ``python -m coordkit.verify``."""
    parser.add_argument("--profile", choices=sorted(PROFILES), default="ci",
                        help="ci: the table every change must pass; nightly: also the larger rows")
    parser.add_argument("--only", metavar="NAME", help="only the row, or the primitive's rows, named NAME")
    parser.add_argument("--markdown", metavar="FILE",
                        help="also write the table with what it proves as Markdown to FILE")
    parser.add_argument("--workers", type=int, default=None, metavar="N",
                        help="run the rows in N worker processes (they are independent; PAR-16)")


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Run the rows, print the table, write the Markdown: 1 when any row fails (FORMAL-20)."""
    from coordkit.engine.parallel import check_workers
    from coordkit.verify.document import document

    configs = rows(args.profile, args.only)
    workers = check_workers(args.workers)
    results = []
    for config, result in zip(configs, _results(args.profile, configs, workers)):
        results.append(result)
        out.write(f"{config.name}: {result.verdict} ({result.schedules} schedules, "
                  f"{result.seconds:.2f}s)\n")
        out.flush()
    out.write("\n" + text(results) + "\n")
    for result in results:
        if result.report is not None:
            out.write(f"\n{result.config.name}:\n{result.report}\n")
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(document(configs, {r.config.name: r for r in results}))
    return 0 if all(r.passed for r in results) else 1


def _results(profile: str, configs: list[Configuration], workers: int | None) -> Iterator[RowResult]:
    """Each row's result, in order: here, or with ``workers`` in that many processes, each
    row rebuilt there from its name (PAR-16)."""
    if workers is None or workers == 1:
        yield from (verify_row(config, budget=PROFILES[profile][1]) for config in configs)
        return
    from coordkit.engine.parallel.pool import in_processes

    jobs = [(profile, config.name) for config in configs]
    for config, fields in zip(configs, in_processes(_verify_named, jobs, workers)):
        yield RowResult(config, *fields)


def _verify_named(job: tuple[str, str]) -> tuple[Any, ...]:
    """In a worker: the row named ``job[1]`` of profile ``job[0]``, its result but the row."""
    profile, name = job
    (config,) = [c for c in rows(profile, name) if c.name == name]
    result = verify_row(config, budget=PROFILES[profile][1])
    return tuple(getattr(result, f.name) for f in dataclasses.fields(result))[1:]


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """``python -m coordkit.verify [--profile ci|nightly] [--only NAME] [--markdown FILE]``."""
    parser = argparse.ArgumentParser(prog="python -m coordkit.verify", description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args, out if out is not None else sys.stdout)
    except (ValueError, TypeError) as exc:
        parser.error(str(exc))
        return 2  # pragma: no cover - parser.error exits
