"""Give the generated project an LGOS it can install, then lock its dependencies.

Rendered from a release (a repository URL with `--checkout`), the project depends on that
release from the index. Rendered from a local clone, whose version may be on no index, the
clone's LGOS is built into vendor/ as a wheel and the project installs it from there
(`[tool.uv.sources]`): `uv lock`, the tests and the Docker image (vendor/ is in its build
context) then work with no index serving LGOS. `_lgos_source` (an editable checkout, what
LGOS's own tests use) wins over both.
"""

import shutil
import subprocess
import sys
from pathlib import Path

SOURCE = {{ cookiecutter._lgos_source | tojson }}
CHECKOUT = {{ cookiecutter._template | lgos_checkout | tojson }}
VERSION = {{ cookiecutter._lgos_version | tojson }}

uv = shutil.which("uv")


def vendor_the_checkout() -> bool:
    """Build the clone's LGOS into vendor/ and point the lgos dependency at it."""
    if uv is None:
        print(f"uv is not installed: cannot build LGOS from {CHECKOUT} into vendor/.")
        return False
    built = subprocess.run(
        [uv, "build", "--quiet", "--wheel", "--out-dir", "vendor", CHECKOUT], check=False
    )
    # uv marks an output folder it creates as ignored; this one is committed with the project.
    ignore = Path("vendor", ".gitignore")
    if ignore.is_file() and ignore.read_text().strip() == "*":
        ignore.unlink()
    wheels = sorted(Path("vendor").glob(f"lgos-{VERSION}-*.whl"))
    if built.returncode != 0 or not wheels:
        print(f"building LGOS {VERSION} from {CHECKOUT} failed (see above).", file=sys.stderr)
        return False
    with Path("pyproject.toml").open("a") as pyproject:
        pyproject.write(
            "\n# Rendered from a local LGOS clone: its LGOS, built into vendor/ (no index serves\n"
            "# that version). Replace vendor/'s wheel to update it; remove this table and the\n"
            "# wheel once the release is on your index.\n"
            "[tool.uv.sources]\n"
            # (Not an f-string: cookiecutter renders this file with Jinja first.)
            'lgos = { path = "vendor/' + wheels[-1].name + '" }\n'
        )
    return True


ready = True
if not SOURCE and CHECKOUT:
    ready = vendor_the_checkout()

if uv is None:
    print("uv is not installed: run `uv lock` in the project once you have it.")
elif ready:
    # The project ships with its lockfile, so the first `uv sync --locked` is reproducible.
    # A failure (offline, or the pinned LGOS release not published yet) must not lose the
    # rendered project: say so, and let the user lock later.
    locked = subprocess.run([uv, "lock", "--quiet"], check=False)
    if locked.returncode != 0:
        print("`uv lock` failed (see above); run it again in the project.", file=sys.stderr)
