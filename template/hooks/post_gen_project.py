"""Lock the generated project's dependencies when uv is installed."""

import shutil
import subprocess
import sys

uv = shutil.which("uv")
if uv is None:
    print("uv is not installed: run `uv lock` in the project once you have it.")
else:
    # The project ships with its lockfile, so the first `uv sync --locked` is reproducible.
    # A failure (offline, or the pinned LGOS release not published yet) must not lose the
    # rendered project: say so, and let the user lock later.
    locked = subprocess.run([uv, "lock", "--quiet"], check=False)
    if locked.returncode != 0:
        print("`uv lock` failed (see above); run it again in the project.", file=sys.stderr)
