"""Every image compose.yaml names, present in the engine: pulled where a registry answers, else a
stand-in built from tests/compose/standins/ (see its README) and named through its variable.

Run alone to build what is missing: `uv run python tests/compose/images.py [--all]` (`--all`
adds the images only the full run uses: Open WebUI, 6.6 GB). It prints the variables compose
needs (`DEMO_POSTGRES_IMAGE=...`), which the harness writes into its env file.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STANDINS = Path(__file__).resolve().parent / "standins"
LABEL = "org.lgos.standin.recipe"
PREFIX = "lgos-standin"
SUITE = "bookworm"
STANDIN_PYTHON = "3.11.2"  # Debian bookworm's python3, which the python stand-in runs
HATCHET_BIN = REPO / ".cache" / "hatchet" / "v0.105.0" / "bin"
# The engine every docker call here talks to (else DOCKER_HOST or the default): set by the harness,
# which may run in a thread and so never changes os.environ.
docker_host: str | None = None
# One caller makes the images at a time (the harness's preparation thread and a fixture may both
# ask), and what it made is remembered for the session: `--all` -> the variables for compose.
_ensuring = threading.Lock()
_ensured: dict[bool, dict[str, str]] = {}


@dataclass(frozen=True)
class Image:
    """One upstream image of compose.yaml and how its stand-in is made."""

    variable: str  # the compose.yaml variable that names it
    upstream: str  # the default of that variable: the image a developer gets
    recipe: str  # folder under standins/
    base: str  # "base" or "python": what the recipe builds FROM
    files: dict[str, Path] = field(default_factory=dict)  # extra context files (name -> source)
    full_only: bool = False  # only `--all` needs it
    # A demo piece (demo/<name>/) whose environment the stand-in installs exactly: the builder
    # freezes that local environment into `requirements.lock` in the build context.
    locks: str | None = None
    # A binary the builder makes with the host's Go from the recipe's Go module (main.go, go.mod,
    # go.sum), put into the build context under this name.
    go_binary: str | None = None

    @property
    def tag(self) -> str:
        return self.upstream.rsplit(":", 1)[1]

    @property
    def standin(self) -> str:
        name = self.upstream.rsplit(":", 1)[0].rsplit("/", 1)[-1]
        return f"{PREFIX}/{name}:{self.tag}"


PYTHON = Image("DEMO_PYTHON_IMAGE", "python:3.11-slim-bookworm", "python", "base")
IMAGES = [
    PYTHON,
    Image("DEMO_POSTGRES_IMAGE", "postgres:17.6-bookworm", "postgres", "base"),
    Image(
        "DEMO_HATCHET_IMAGE",
        "ghcr.io/hatchet-dev/hatchet/hatchet-lite:v0.105.0",
        "hatchet-lite",
        "base",
        {
            **{
                name: HATCHET_BIN / name
                for name in ("hatchet-lite", "hatchet-admin", "hatchet-migrate")
            },
            "hatchet-bootstrap.sh": REPO / "scripts" / "hatchet-bootstrap.sh",
        },
    ),
    Image(
        "DEMO_LITELLM_IMAGE",
        "ghcr.io/berriai/litellm:v1.110.2",
        "litellm",
        "python",
        locks="litellm",
    ),
    Image(
        "DEMO_OPENWEBUI_IMAGE",
        "ghcr.io/open-webui/open-webui:v0.12.4-slim",
        "openwebui",
        "python",
        full_only=True,
        locks="openwebui",
    ),
    Image(
        "DEMO_OTEL_IMAGE",
        "otel/opentelemetry-collector-contrib:0.137.0",
        "otel-collector",
        "base",
        full_only=True,
        go_binary="otelcol-contrib",
    ),
]


def log(message: str) -> None:
    """Progress (the harness sends it to pytest's terminal instead)."""
    print(f"images: {message}", file=sys.stderr, flush=True)


def docker(*args: str, timeout: float = 3600, **kwargs: object) -> subprocess.CompletedProcess[str]:
    host = {"DOCKER_HOST": docker_host} if docker_host else {}
    return subprocess.run(
        ["docker", *args],
        text=True,
        timeout=timeout,
        env={**os.environ, "DOCKER_BUILDKIT": "0", **host},
        **kwargs,  # type: ignore[arg-type]
    )


def label_of(image: str) -> str | None:
    found = docker(
        "image",
        "inspect",
        "-f",
        # A Go template: the label's name in double quotes.
        "{{ index .Config.Labels " + f'"{LABEL}"' + " }}",
        image,
        capture_output=True,
    )
    return found.stdout.strip() if found.returncode == 0 else None


def present(image: str) -> bool:
    return docker("image", "inspect", image, capture_output=True).returncode == 0


def host_ca_bundle() -> Path:
    """The trust store the host's pip uses: a TLS-inspecting proxy's CA lives there."""
    for variable in ("PIP_CERT", "SSL_CERT_FILE"):
        if os.environ.get(variable) and Path(os.environ[variable]).is_file():
            return Path(os.environ[variable])
    return Path("/etc/ssl/certs/ca-certificates.crt")


def digest(*parts: bytes) -> str:
    hashed = hashlib.sha256()
    for part in parts:
        hashed.update(hashlib.sha256(part).digest())
    return hashed.hexdigest()[:16]


def mirror() -> str:
    return os.environ.get("DEBIAN_MIRROR", "http://deb.debian.org/debian")


def base_recipe() -> str:
    ca = host_ca_bundle()
    return digest(
        f"debootstrap --variant=minbase {SUITE} {mirror()}".encode(),
        ca.read_bytes() if ca.is_file() else b"",
    )


def ensure_base() -> tuple[str, str]:
    """The Debian base every stand-in starts from: debootstrap, imported with the CA bundle."""
    name, recipe = f"{PREFIX}/debian:{SUITE}", base_recipe()
    if label_of(name) == recipe:
        return name, recipe
    if not shutil.which("debootstrap"):
        raise SystemExit(
            "images: no registry answers and debootstrap is missing (apt install debootstrap)"
        )
    started = time.monotonic()
    log(f"building {name} with debootstrap (about 1.5 min)")
    with tempfile.TemporaryDirectory(prefix="lgos-rootfs-") as rootfs:
        subprocess.run(
            ["debootstrap", "--variant=minbase", SUITE, rootfs, mirror()],
            check=True,
            stdout=subprocess.DEVNULL,
            timeout=1800,
        )
        # No apt caches in the image; the host's trust store for builds behind a TLS proxy.
        shutil.rmtree(Path(rootfs) / "var" / "cache" / "apt" / "archives", ignore_errors=True)
        ca = host_ca_bundle()
        if ca.is_file():
            (Path(rootfs) / "etc" / "ssl").mkdir(exist_ok=True)
            shutil.copyfile(ca, Path(rootfs) / "etc" / "ssl" / "lgos-build-ca.pem")
        changes = [f"LABEL {LABEL}={recipe}"]
        if ca.is_file():
            changes += [
                f"ENV {var}=/etc/ssl/lgos-build-ca.pem"
                for var in ("SSL_CERT_FILE", "PIP_CERT", "REQUESTS_CA_BUNDLE")
            ]
        tar = subprocess.Popen(["tar", "-C", rootfs, "-c", "."], stdout=subprocess.PIPE)
        args = [arg for change in changes for arg in ("--change", change)]
        docker("import", *args, "-", name, stdin=tar.stdout, check=True, stdout=subprocess.DEVNULL)
        assert tar.wait() == 0
    log(f"built {name} in {time.monotonic() - started:.0f} s")
    return name, recipe


def lock_of(piece: str) -> bytes:
    """Exact pins for the stand-in of a demo piece: its requirements.txt resolved for the
    stand-in's Python, preferring the versions of the local stack's environment (demo/<piece>/
    .venv, made by its setup script, which `just setup` runs; idempotent). Installing exact pins
    needs no resolution in the image (pip's resolver spent about 10 minutes backtracking through
    the LiteLLM proxy's open ranges), and the stand-in runs what the local stack runs, except
    where a release needs a newer Python than Debian's (the local venv may run a newer 3.11)."""
    folder = REPO / "demo" / piece
    started = time.monotonic()
    setup = ["bash", str(folder / "setup.sh")]
    subprocess.run(setup, check=True, capture_output=True, timeout=3600)
    with tempfile.TemporaryDirectory(prefix="lgos-lock-") as scratch:
        lock = Path(scratch) / "requirements.lock"
        # An existing output file is what `uv pip compile` keeps where it can.
        freeze = ["uv", "pip", "freeze", "--python", str(folder / ".venv" / "bin" / "python")]
        lock.write_text(subprocess.run(freeze, check=True, capture_output=True, text=True).stdout)
        compile_for_the_image = [
            *("uv", "pip", "compile", "--quiet", "--no-header", "--no-annotate"),
            *("--python-version", STANDIN_PYTHON, "--python-platform", "x86_64-manylinux_2_36"),
            *(str(folder / "requirements.txt"), "-o", str(lock)),
        ]
        subprocess.run(compile_for_the_image, check=True, capture_output=True, timeout=600)
        pins = sorted(line for line in lock.read_text().splitlines() if "==" in line)
    log(f"demo/{piece}: {len(pins)} pins in {time.monotonic() - started:.0f} s")
    return "".join(pin + "\n" for pin in pins).encode()


def context_files(image: Image) -> dict[str, bytes]:
    """What the builder adds to the recipe's folder in the build context."""
    files: dict[str, bytes] = {}
    for name, source in sorted(image.files.items()):
        if not source.is_file():
            raise SystemExit(
                f"images: {image.recipe} needs {source.relative_to(REPO)}, which is missing"
            )
        files[name] = source.read_bytes()
    if image.locks:
        files["requirements.lock"] = lock_of(image.locks)
    return files


def recipe_of(image: Image, base_digest: str, added: dict[str, bytes]) -> str:
    folder = STANDINS / image.recipe
    parts = [base_digest.encode()]
    for path in sorted(folder.iterdir()):
        parts += [path.name.encode(), path.read_bytes()]
    for name, content in sorted(added.items()):
        parts += [name.encode(), content]
    return digest(*parts)


def go_build(module: Path, binary: str) -> None:
    """A static build of the Go module in `module` (its go.sum pins every dependency)."""
    started = time.monotonic()
    env = {**os.environ, "CGO_ENABLED": "0", "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=readonly"}
    built = subprocess.run(
        ["go", "build", "-trimpath", "-o", binary, "."],
        cwd=module,
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    if built.returncode != 0:
        raise SystemExit(f"images: go build of {binary} failed:\n{built.stderr[-6000:]}")
    log(f"go build of {binary}: {time.monotonic() - started:.0f} s")


def build(image: Image, bases: dict[str, tuple[str, str]]) -> str:
    base_name, base_digest = bases[image.base]
    added = context_files(image)
    recipe = recipe_of(image, base_digest, added)
    if label_of(image.standin) == recipe:
        return recipe
    started = time.monotonic()
    log(f"building {image.standin} (stand-in for {image.upstream})")
    with tempfile.TemporaryDirectory(prefix="lgos-standin-") as context:
        shutil.copytree(STANDINS / image.recipe, context, dirs_exist_ok=True)
        for name, source in image.files.items():
            shutil.copy(source, Path(context) / name)  # with its mode: binaries stay executable
        if image.locks:
            (Path(context) / "requirements.lock").write_bytes(added["requirements.lock"])
        if image.go_binary:
            go_build(Path(context), image.go_binary)
        arg = "BASE" if image.base == "base" else "PYTHON"
        result = docker(
            "build",
            "--network",
            "host",
            "--label",
            f"{LABEL}={recipe}",
            "--build-arg",
            f"{arg}={base_name}",
            "-t",
            image.standin,
            context,
            capture_output=True,
        )
    if result.returncode != 0:
        raise SystemExit(
            f"images: building {image.standin} failed:\n{result.stdout[-6000:]}\n{result.stderr}"
        )
    log(f"built {image.standin} in {time.monotonic() - started:.0f} s")
    return recipe


def registry_answers(image: str) -> bool:
    try:
        return docker("pull", "-q", image, timeout=60, capture_output=True).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def ensure_python() -> str:
    """The python image the project's Dockerfiles build FROM: upstream, or its stand-in."""
    with _ensuring:
        if present(PYTHON.upstream):
            return PYTHON.upstream
        build(PYTHON, {"base": ensure_base()})
        return PYTHON.standin


def ensure(full: bool) -> dict[str, str]:
    """Make every image present; return the variables to hand compose (stand-ins only). Once
    per process: a later call gets the first one's answer (`--all` answers for both)."""
    with _ensuring:
        if full not in _ensured and True in _ensured:
            wanted = {image.variable for image in IMAGES if not image.full_only}
            _ensured[False] = {k: v for k, v in _ensured[True].items() if k in wanted}
        if full not in _ensured:
            _ensured[full] = _ensure(full)
        return dict(_ensured[full])


def _ensure(full: bool) -> dict[str, str]:
    wanted = [image for image in IMAGES if full or not image.full_only]
    missing = [image for image in wanted if not present(image.upstream)]
    if not missing or registry_answers(missing[0].upstream):
        for image in missing[1:]:
            docker("pull", "-q", image.upstream, check=True, capture_output=True)
        return {}
    log(f"no registry answers for {missing[0].upstream}: using stand-ins")
    bases = {"base": ensure_base()}
    todo = [image for image in wanted if image is not PYTHON and not present(image.upstream)]
    # The stand-ins build side by side, each as soon as its base is there: most of a build is
    # waiting for apt, PyPI and the layer commit, so two cores keep up with several.
    with ThreadPoolExecutor(max_workers=1 + len(todo)) as pool:
        python = pool.submit(build, PYTHON, bases)

        def on_its_base(image: Image) -> str:
            if image.base == "python":
                return build(image, {"python": (PYTHON.standin, python.result())})
            return build(image, bases)

        builds = [pool.submit(on_its_base, image) for image in todo]
        for finished in [python, *builds]:
            finished.result()  # the first failure is raised here
    # The api and chainlit images build FROM the python stand-in, and openwebui-sync runs it.
    variables = {PYTHON.variable: PYTHON.standin}
    variables.update({image.variable: image.standin for image in todo})
    return variables


if __name__ == "__main__":
    for variable, value in ensure("--all" in sys.argv[1:]).items():
        print(f"{variable}={value}")
