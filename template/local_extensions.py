"""Jinja additions the template's files use; cookiecutter imports them from this folder
(`_extensions` in cookiecutter.json).

`lgos_checkout` tells a render from a local LGOS clone (`cookiecutter /path/to/lgos --directory
template`) from one of a release (a repository URL with `--checkout vX.Y.Z`): only the release's
version can be installed from an index, so a local render installs the clone's LGOS instead
(hooks/post_gen_project.py builds it into the project's vendor/ folder).
"""

from __future__ import annotations

from pathlib import Path

from cookiecutter.config import BUILTIN_ABBREVIATIONS
from cookiecutter.repository import expand_abbreviations, is_repo_url, is_zip_file
from jinja2 import Environment
from jinja2.ext import Extension

# This file sits in template/ of the checkout cookiecutter reads the template from.
CHECKOUT = Path(__file__).resolve().parent.parent


def checkout_of(template: str) -> str:
    """The LGOS checkout a local template argument belongs to; "" for a URL or an archive."""
    if is_zip_file(template) or is_repo_url(expand_abbreviations(template, BUILTIN_ABBREVIATIONS)):
        return ""
    pyproject = CHECKOUT / "pyproject.toml"
    if not pyproject.is_file() or 'name = "lgos"' not in pyproject.read_text():
        return ""
    return str(CHECKOUT)


class LgosCheckout(Extension):
    """Adds the `lgos_checkout` filter: `{{ cookiecutter._template | lgos_checkout }}`."""

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        environment.filters["lgos_checkout"] = checkout_of
