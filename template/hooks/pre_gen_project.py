"""Refuse answers that would render a broken project, before any file is written.

Cookiecutter renders this file with the answers, then runs it; a non-zero exit stops the
generation and leaves nothing behind.
"""

import keyword
import re
import sys

NAME = {{ cookiecutter.project_name | tojson }}
SLUG = {{ cookiecutter.project_slug | tojson }}
# Names the generated project imports or uses for its own folders: a package called like one
# of them would shadow it.
TAKEN = {"lgos", "langgraph", "langchain_core", "langchain_openai", "openai", "tests", "examples"}
# Lowercase, starting with a letter and ending with a letter or digit: the distribution name
# (underscores become hyphens) and the Compose project name must be valid too.
SLUG_SHAPE = re.compile(r"[a-z](?:[a-z0-9_]*[a-z0-9])?")
# Longer names would push generated lines past the 100-column lint limit.
MAX_NAME, MAX_SLUG = 60, 40


def problem() -> str | None:
    if not NAME.strip():
        return "project_name is empty"
    if len(NAME) > MAX_NAME:
        return f"project_name is {len(NAME)} characters long; keep it to {MAX_NAME}"
    if any(character in NAME for character in '"\\\n'):
        return "project_name may not contain double quotes, backslashes or line breaks"
    if not SLUG.isidentifier() or not SLUG.isascii():
        return (
            f"project_slug {SLUG!r} is not a Python identifier: use lowercase ASCII letters, "
            "digits and underscores, starting with a letter (e.g. 'support_bot')"
        )
    if keyword.iskeyword(SLUG):
        return f"project_slug {SLUG!r} is a Python keyword; pick another name"
    if not SLUG_SHAPE.fullmatch(SLUG):
        return (
            f"project_slug {SLUG!r} must be lowercase, start with a letter and end with a "
            "letter or digit (e.g. 'support_bot')"
        )
    if len(SLUG) > MAX_SLUG:
        return f"project_slug is {len(SLUG)} characters long; keep it to {MAX_SLUG}"
    if SLUG in TAKEN:
        return f"project_slug {SLUG!r} would shadow the {SLUG!r} package; pick another name"
    return None


found = problem()
if found:
    print(f"ERROR: {found}", file=sys.stderr)
    sys.exit(1)
