"""`lgos serve` (Uvicorn's command, with a registry factory for the app) and `lgos worker`."""

from __future__ import annotations

import os
import sys
from typing import Any

import click
import uvicorn
from uvicorn.main import main as uvicorn_main

from lgos.core.errors import ConfigurationError

APP_FACTORY = "lgos.server.app:app_from_environment"
LIMITED_HTTP = "lgos.server.protocol:LimitedHttpToolsProtocol"
FILE_DESCRIPTORS = 65536
# Uvicorn options that name the application: LGOS supplies the app itself.
_REPLACED = {"app", "factory"}
WORKER_HEALTHCHECK_SECONDS = 30


def _fail(message: str) -> None:
    click.echo(f"Error: {message}", err=True)
    sys.exit(2)


def load_settings() -> Any:
    """The `LGOS_*` settings, or exit with one line naming the bad variable."""
    from lgos.server.settings import ServerSettings

    try:
        return ServerSettings.from_environment()
    except ConfigurationError as error:
        _fail(str(error))


def _resolve_registry(registry: str | None) -> str:
    registry = registry or os.environ.get("LGOS_REGISTRY") or None
    if not registry:
        _fail("name the registry factory (MODULE:FACTORY) or set LGOS_REGISTRY")
    assert registry is not None
    os.environ["LGOS_REGISTRY"] = registry  # Uvicorn's worker and reload processes read it
    return registry


def _serve_params() -> list[click.Parameter]:
    params: list[click.Parameter] = [
        click.Argument(["registry"], required=False, metavar="MODULE:FACTORY")
    ]
    for param in uvicorn_main.params:
        if param.name in _REPLACED:
            continue
        if param.name == "access_log":
            param = click.Option(
                ["--access-log/--no-access-log"],
                default=False,
                help="Log each request (off by default: the ingress owns access logs).",
            )
        elif param.name == "log_level":
            param = click.Option(
                ["--log-level"],
                type=param.type,
                default=None,
                help="Level of LGOS's, Uvicorn's and the registry package's loggers "
                "(default: info; other libraries: warning).",
            )
        elif param.name == "timeout_worker_healthcheck":
            # A spawned worker answers health checks only once it has imported LGOS and
            # LangGraph, which takes more than Uvicorn's 5 s on a busy host: the supervisor
            # would kill and respawn workers forever.
            param = click.Option(
                ["--timeout-worker-healthcheck"],
                type=int,
                default=WORKER_HEALTHCHECK_SECONDS,
                show_default=True,
                help="Maximum number of seconds to wait for a worker to respond to a "
                "healthcheck (LGOS default: workers import LangGraph first).",
            )
        params.append(param)
    return params


@click.pass_context
def _serve(ctx: click.Context, /, registry: str | None, **options: Any) -> None:
    env_file = options.get("env_file")
    if env_file:
        from dotenv import load_dotenv

        load_dotenv(env_file, override=False)
    registry = _resolve_registry(registry)
    settings = load_settings()
    workers = options.get("workers")
    if workers is None:  # Uvicorn reads WEB_CONCURRENCY itself, after this check
        concurrency = os.environ.get("WEB_CONCURRENCY", "")
        workers = int(concurrency) if concurrency.strip().isdigit() else 1
    if workers > 1 and settings.BACKGROUND == "memory":
        _fail(
            "LGOS_BACKGROUND=memory runs background work inside one process; with "
            f"--workers {workers} set LGOS_BACKGROUND=dbos (or hatchet) or LGOS_BACKGROUND=none"
        )
    try:
        from lgos.server.app import import_factory

        import_factory(registry)  # fail now, with a clear message, not inside a worker
    except ConfigurationError as error:
        _fail(str(error))
    _apply_limits(options, settings)
    if options.get("log_config") is None:
        from lgos.server.logging import logging_config, registry_package

        package = registry_package(registry)
        # --use-colors / --no-use-colors choose readable lines or JSON whatever stdout is;
        # Uvicorn must not apply them itself: it edits formatters this configuration lacks.
        use_colors = options.get("use_colors")
        # --log-level is Uvicorn's option for its own loggers; `lgos serve` applies it to the
        # loggers it shows (a request's record is INFO: `--log-level warning` leaves it out).
        log_level = options.get("log_level")
        options["log_config"] = logging_config(
            (package,) if package else (),
            json_output=None if use_colors is None else not use_colors,
            level=log_level.upper() if log_level else "INFO",
        )
        options["use_colors"] = None
    warn_if_open(options.get("host") or "127.0.0.1", settings, options.get("log_config"))
    ctx.invoke(uvicorn_main, app=APP_FACTORY, factory=True, **options)


def warn_if_open(host: str, settings: Any, log_config: object) -> None:
    """One WARNING, from the supervisor (not once per worker), when the server takes requests
    from other hosts without API keys: anyone who reaches the port runs every graph and reads
    everything stored under the shared owner."""
    import ipaddress
    import logging
    import logging.config

    if settings.API_KEYS is not None or settings.API_KEYS_FILE is not None:
        return
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if loopback:
        return
    if isinstance(log_config, dict):
        logging.config.dictConfig(log_config)  # Uvicorn applies the same one again after
    logging.getLogger("lgos.server").warning(
        "server.auth.none",
        extra={
            "detail": f"listening on {host} without LGOS_API_KEYS: anyone who reaches the "
            "port runs every graph and reaches every stored object (docs/security.md)"
        },
    )


def _apply_limits(options: dict[str, object], settings: Any) -> None:
    """Header size and header timeout limits (LGOS_MAX_HEADER_BYTES, LGOS_HEADER_TIMEOUT_SECONDS)
    unless the operator chose a protocol; more file descriptors where the hard limit allows."""
    if options.get("http") in (None, "auto"):
        try:
            import httptools  # noqa: F401
        except ImportError:
            options["http"] = "h11"
        else:
            options["http"] = LIMITED_HTTP
    if options.get("h11_max_incomplete_event_size") is None:
        options["h11_max_incomplete_event_size"] = settings.MAX_HEADER_BYTES
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = FILE_DESCRIPTORS if hard == resource.RLIM_INFINITY else min(hard, FILE_DESCRIPTORS)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        # Every connection costs a descriptor; the soft limit (often 1024) is a default
        # nobody chose, and the hard one is the operator's ceiling.
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


serve = click.Command(
    "serve",
    callback=_serve,
    params=_serve_params(),
    help="Serve a graph registry (MODULE:FACTORY, or LGOS_REGISTRY) as an OpenAI-compatible "
    "API. Takes every Uvicorn option, as a flag or a UVICORN_* variable.",
    context_settings={"auto_envvar_prefix": "UVICORN"},
)


@click.command("worker")
@click.argument("registry", required=False, metavar="MODULE:FACTORY")
def worker(registry: str | None) -> None:
    """Run background Responses for the configured engine (LGOS_BACKGROUND=dbos|hatchet)."""
    registry = _resolve_registry(registry)
    settings = load_settings()
    if settings.BACKGROUND not in ("dbos", "hatchet"):
        _fail("lgos worker needs LGOS_BACKGROUND=dbos or LGOS_BACKGROUND=hatchet")
    from lgos.server.worker import run_worker

    try:
        run_worker(registry, settings)
    except ConfigurationError as error:
        _fail(str(error))


@click.group()
@click.version_option(package_name="lgos")
def main() -> None:
    """LGOS: LangGraph graphs as OpenAI-compatible models."""


main.add_command(serve)
main.add_command(worker)

__all__ = ["main", "uvicorn"]


if __name__ == "__main__":
    main()
