"""The three sizes of a run, the same words in both suites: full (the published figures),
`--quick` (a look in a few minutes) and `--smoke` (tiny counts: proves it runs, for CI)."""

from __future__ import annotations

import argparse
from typing import Literal

Size = Literal["full", "quick", "smoke"]


def add_size_options(parser: argparse.ArgumentParser, quick: str) -> None:
    """`quick` says how long a quick run takes for this suite."""
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help=f"fewer runs: {quick}")
    size.add_argument("--smoke", action="store_true", help="tiny counts: proves it runs (CI)")


def chosen_size(args: argparse.Namespace) -> Size:
    return "smoke" if args.smoke else "quick" if args.quick else "full"
