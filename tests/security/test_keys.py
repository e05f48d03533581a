"""API keys and the authentication hook as clients see them: the strict OpenAI SDK's own
errors, the key file, public model listings, the documented JWT hook, idempotency keys across
owners, and `lgos serve`'s warning when it is open to the network."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import jwt
import openai
import pytest
from fastapi import FastAPI
from openai import AsyncOpenAI
from pydantic import SecretStr

from lgos import ApiKeys, Authenticate, ConfigurationError, ServerSettings, create_app
from tests.security.matrix import NO_KEY_REFUSAL, bearer
from tests.support.processes import Process, clean_environment, serving

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]

REGISTRY = "demo.registry:create_registry"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "security.md"
ALICE_KEY = f"sk-{uuid.uuid4().hex}"
BOB_KEY = f"sk-{uuid.uuid4().hex}"
KEYS = f"alice={ALICE_KEY},bob={BOB_KEY}"
USER_HEADER = "x-lgos-user"


def settings(**values: Any) -> ServerSettings:
    defaults: dict[str, Any] = {
        "POSTGRES_URI": None,
        "BACKGROUND": "memory",
        "CORS_ORIGINS": [],
        "ENABLE_LANGFUSE": False,
        "RESPONSE_SWEEP_INTERVAL_MINUTES": 0,
        "INTERRUPT_SWEEP_INTERVAL_MINUTES": 0,
    }
    return ServerSettings(**{**defaults, **values})


@asynccontextmanager
async def started(app: FastAPI) -> AsyncIterator[httpx2.AsyncClient]:
    transport = httpx2.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx2.AsyncClient(transport=transport, base_url="http://lgos", timeout=60) as http,
    ):
        yield http


def sdk(http: httpx2.AsyncClient, key: str) -> AsyncOpenAI:
    return AsyncOpenAI(
        base_url="http://lgos/v1",
        api_key=key,
        http_client=http,
        _strict_response_validation=True,
        max_retries=0,
    )


async def test_the_sdk_raises_authentication_error_and_owners_stay_apart() -> None:
    app = create_app(REGISTRY, settings=settings(API_KEYS=SecretStr(KEYS)))
    async with started(app) as http:
        alice, bob = sdk(http, ALICE_KEY), sdk(http, BOB_KEY)
        with pytest.raises(openai.AuthenticationError) as refused:
            await sdk(http, "sk-" + uuid.uuid4().hex).models.list()
        assert refused.value.status_code == 401
        assert refused.value.code == "invalid_api_key"
        stored = await alice.responses.create(model="simple-graph", input="hi", store=True)
        assert (await alice.responses.retrieve(stored.id)).id == stored.id
        with pytest.raises(openai.NotFoundError):
            await bob.responses.retrieve(stored.id)
        with pytest.raises(openai.NotFoundError):
            await bob.responses.delete(stored.id)
        assert (await alice.responses.retrieve(stored.id)).status == "completed"


async def test_keys_come_from_the_file_and_the_variable_together(tmp_path: Path) -> None:
    carol_key = f"sk-{uuid.uuid4().hex}"
    keys_file = tmp_path / "keys"
    keys_file.write_text(f"# rotated monthly\ncarol = {carol_key}\n\n")
    app = create_app(REGISTRY, settings=settings(API_KEYS=SecretStr(KEYS), API_KEYS_FILE=keys_file))
    async with started(app) as http:
        for key in (ALICE_KEY, carol_key):
            assert (await http.get("/v1/models", headers=bearer(key))).status_code == 200
        assert (await http.get("/v1/models")).json() == NO_KEY_REFUSAL


def test_a_bad_key_entry_is_named_by_its_place_never_by_its_text() -> None:
    with pytest.raises(ConfigurationError) as bad:
        ApiKeys.parse("alice=sk-fine,sk-very-secret-without-owner", source="LGOS_API_KEYS")
    assert str(bad.value) == "LGOS_API_KEYS: entry 2 is not 'owner=key'"
    with pytest.raises(ConfigurationError) as missing:
        create_app(REGISTRY, settings=settings(API_KEYS_FILE=Path("/nonexistent/lgos-keys")))
    assert "LGOS_API_KEYS_FILE" in str(missing.value)


def test_keys_and_a_hook_do_not_mix() -> None:
    async def anyone(request: Any) -> str:
        return "anyone"

    keyed = settings(API_KEYS=SecretStr(KEYS))
    with pytest.raises(ConfigurationError, match="authenticate"):
        create_app(REGISTRY, settings=keyed, authenticate=anyone)
    gateway = settings(API_KEYS=SecretStr(KEYS), SCOPE_HEADER=USER_HEADER)
    with pytest.raises(ConfigurationError, match="authenticate"):
        create_app(REGISTRY, settings=gateway, authenticate=anyone)


async def test_a_gateway_key_names_users_who_stay_apart() -> None:
    """`LGOS_API_KEYS` and `LGOS_SCOPE_HEADER` together: the key authenticates the gateway,
    the header names one of its users. Each user is an owner of their own; the holder of
    another key cannot name them, nor can the gateway's key without the header."""
    gateway_key, other_key = f"sk-{uuid.uuid4().hex}", f"sk-{uuid.uuid4().hex}"
    keys = SecretStr(f"litellm={gateway_key},other={other_key}")
    app = create_app(REGISTRY, settings=settings(API_KEYS=keys, SCOPE_HEADER=USER_HEADER))

    def user(key: str, name: str | None) -> dict[str, str]:
        return {"authorization": f"Bearer {key}", **({USER_HEADER: name} if name else {})}

    async with started(app) as http:
        body = {"model": "simple-graph", "input": "hi", "store": True}
        created = await http.post("/v1/responses", json=body, headers=user(gateway_key, "alice"))
        assert created.status_code == 200, created.text
        url = f"/v1/responses/{created.json()['id']}"
        assert (await http.get(url, headers=user(gateway_key, "alice"))).status_code == 200
        for stranger in (
            user(gateway_key, "bob"),  # another user of the same gateway
            user(other_key, "alice"),  # another key naming the same user
            user(gateway_key, None),  # the gateway's key as itself
            user(other_key, None),
        ):
            refused = await http.get(url, headers=stranger)
            assert refused.status_code == 404, (stranger, refused.text)
        # A named user without the key is nobody.
        anonymous = await http.get(url, headers={USER_HEADER: "alice"})
        assert anonymous.status_code == 401
        assert anonymous.json() == NO_KEY_REFUSAL


def test_a_key_owner_that_could_be_a_gateway_user_is_refused() -> None:
    """With the user header, `a/b` as a key's owner would be the user b of the key owner a."""
    keys = SecretStr("litellm=sk-one,litellm/alice=sk-two")
    with pytest.raises(ConfigurationError, match="'/'"):
        create_app(REGISTRY, settings=settings(API_KEYS=keys, SCOPE_HEADER=USER_HEADER))


async def test_public_models_answer_without_a_key_and_nothing_else_does() -> None:
    app = create_app(REGISTRY, settings=settings(API_KEYS=SecretStr(KEYS), PUBLIC_MODELS=True))
    async with started(app) as http:
        for path in (
            "/v1/models",
            "/v1/models/simple-graph",
            "/v1/version",
            "/a2a/simple-graph/.well-known/agent-card.json",
        ):
            assert (await http.get(path)).status_code == 200, path
        created = await http.post("/v1/responses", json={"model": "simple-graph", "input": "x"})
        assert created.status_code == 401
        assert created.json() == NO_KEY_REFUSAL


async def test_an_idempotency_key_is_per_owner() -> None:
    app = create_app(REGISTRY, settings=settings(API_KEYS=SecretStr(KEYS)))
    body = {"model": "simple-graph", "input": "same body", "store": True}
    key = {"idempotency-key": "order-42"}
    async with started(app) as http:
        first = await http.post("/v1/responses", json=body, headers={**bearer(ALICE_KEY), **key})
        other = await http.post("/v1/responses", json=body, headers={**bearer(BOB_KEY), **key})
        again = await http.post("/v1/responses", json=body, headers={**bearer(ALICE_KEY), **key})
        assert first.status_code == other.status_code == again.status_code == 200
        # Bob's request ran for Bob: not a replay of Alice's Response, which he cannot read.
        assert other.json()["id"] != first.json()["id"]
        assert again.json()["id"] == first.json()["id"]
        peek = await http.get(f"/v1/responses/{first.json()['id']}", headers=bearer(BOB_KEY))
        assert peek.status_code == 404


def documented_hook() -> Any:
    """The JWT hook of docs/security.md, run as the page shows it."""
    text = DOCS.read_text()
    (block,) = re.findall(r"```python\n(# jwt_auth\.py\n.*?)```", text, flags=re.S)
    namespace: dict[str, Any] = {}
    exec(compile(block, str(DOCS), "exec"), namespace)
    return namespace["jwt_authenticate"]


SECRET = uuid.uuid4().hex


def token(subject: str, *, scope: str = "lgos", expires_in: float = 300) -> str:
    claims = {"sub": subject, "aud": "lgos", "scope": scope, "exp": time.time() + expires_in}
    return jwt.encode(claims, SECRET, algorithm="HS256")


async def test_the_documented_jwt_hook_authenticates_and_refuses() -> None:
    hook: Authenticate = documented_hook()(SECRET, audience="lgos", algorithms=["HS256"])
    app = create_app(REGISTRY, settings=settings(), authenticate=hook)
    async with started(app) as http:
        alice, bob = sdk(http, token("alice")), sdk(http, token("bob"))
        stored = await alice.responses.create(model="simple-graph", input="hi", store=True)
        with pytest.raises(openai.NotFoundError):
            await bob.responses.retrieve(stored.id)
        with pytest.raises(openai.AuthenticationError) as expired:
            await sdk(http, token("alice", expires_in=-60)).responses.retrieve(stored.id)
        assert expired.value.body == {
            "message": "The token is invalid or expired.",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_api_key",
        }
        with pytest.raises(openai.PermissionDeniedError) as unscoped:
            await sdk(http, token("alice", scope="mail")).responses.retrieve(stored.id)
        assert unscoped.value.status_code == 403
        claims = {"sub": "alice", "aud": "lgos", "scope": "lgos", "exp": time.time() + 60}
        forged = jwt.encode(claims, "another secret", algorithm="HS256")
        with pytest.raises(openai.AuthenticationError):
            await sdk(http, forged).responses.retrieve(stored.id)
        assert (await alice.responses.retrieve(stored.id)).id == stored.id


@pytest.fixture(scope="module")
def open_server() -> Iterator[Process]:
    env = clean_environment(LGOS_BACKGROUND="none")
    with serving([REGISTRY, "--host", "0.0.0.0", "--port", "0"], env) as process:
        yield process


@pytest.mark.processes
def test_lgos_serve_warns_once_when_open_to_the_network(open_server: Process) -> None:
    (warning,) = [r for r in open_server.records() if r.get("message") == "server.auth.none"]
    assert warning["level"] == "warning"
    assert "LGOS_API_KEYS" in warning["detail"]


@pytest.mark.processes
def test_lgos_serve_with_keys_does_not_warn_and_logs_no_key() -> None:
    env = clean_environment(LGOS_BACKGROUND="none", LGOS_API_KEYS=KEYS)
    with serving([REGISTRY, "--host", "0.0.0.0", "--port", "0"], env) as server:
        url = server.base_url
        refused = httpx2.get(url + "/v1/models", headers=bearer("sk-" + uuid.uuid4().hex))
        allowed = httpx2.get(url + "/v1/models", headers=bearer(ALICE_KEY))
        assert (refused.status_code, allowed.status_code) == (401, 200)
        server.wait_for_record(lambda r: r.get("http.response.status_code") == 200)
        records = server.records()
    assert not [r for r in records if r.get("message") == "server.auth.none"]
    assert ALICE_KEY not in "\n".join(server.stdout + server.stderr)
