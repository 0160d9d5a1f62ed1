"""docker-compose.yml and the Dockerfile, checked against the code (no Docker here)."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from api.cli.main import build_parser
from api.config import ProcessSettings

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]
SETTINGS_ENV = {name.upper() for name in ProcessSettings.model_fields}
IMAGE_ENV = {"POSTGRES_DB", "POSTGRES_USER", "POSTGRES_PASSWORD"}


def _env(service: dict) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {k: str(v) for k, v in env.items()}


def test_the_stack_has_every_part():
    assert {"postgres", "redis", "migrate", "api", "worker"} <= set(SERVICES)


def test_every_variable_set_is_one_the_settings_read():
    for name, service in SERVICES.items():
        if "build" not in service:
            assert set(_env(service)) <= IMAGE_ENV, name
            continue
        unknown = set(_env(service)) - SETTINGS_ENV
        assert not unknown, f"{name} sets variables nothing reads: {unknown}"


# Conditions that hold a service back until its dependency is healthy or has finished.
START_CONDITIONS = ("service_healthy", "service_completed_successfully")
# What the service cannot run without (DESIGN.md: Postgres is the one load-bearing
# dependency; migrate is the one-shot that prepares it).
LOAD_BEARING = {"postgres", "migrate"}


def _depends_on(service: dict) -> dict[str, dict]:
    deps = service.get("depends_on") or {}
    if isinstance(deps, list):  # the short form means service_started
        return {dep: {"condition": "service_started"} for dep in deps}
    return {dep: cond or {"condition": "service_started"} for dep, cond in deps.items()}


def test_depends_on_names_existing_services_with_real_conditions():
    for name, service in SERVICES.items():
        for dep, cond in _depends_on(service).items():
            assert dep in SERVICES, f"{name} depends on unknown {dep}"
            assert cond.get("condition", "service_started") in (
                "service_started", *START_CONDITIONS)
            if cond.get("condition") == "service_healthy":
                assert "healthcheck" in SERVICES[dep], f"{dep} has no healthcheck"


def test_no_optional_service_holds_back_the_api_or_the_worker():
    for name in ("api", "worker"):
        for dep, cond in _depends_on(SERVICES[name]).items():
            if dep in LOAD_BEARING:
                continue
            condition = cond.get("condition", "service_started")
            assert condition not in START_CONDITIONS, (
                f"{name} waits for optional {dep} ({condition}): a {dep} that never gets "
                "there would keep it from starting")
            # Compose fails the whole `up` of a dependent whose required dependency
            # cannot be started; an optional one must say required: false.
            assert cond.get("required") is False, f"{name}: {dep} must be required: false"


def test_redis_is_optional_and_postgres_is_waited_for():
    for name in ("api", "worker"):
        deps = _depends_on(SERVICES[name])
        assert "redis" in deps, name  # started first when it can be
        assert deps["migrate"]["condition"] == "service_completed_successfully", name
    assert _depends_on(SERVICES["migrate"])["postgres"]["condition"] == "service_healthy"


def test_long_running_services_have_health_checks():
    for name in ("postgres", "redis", "api", "worker"):
        assert "healthcheck" in SERVICES[name], name


def test_commands_are_real_cli_commands():
    parser = build_parser()
    for name in ("migrate", "api", "worker"):
        cmd = SERVICES[name]["command"]
        assert cmd[0] == "helpdesk"
        parser.parse_args(cmd[1:])  # exits (fails the test) on an unknown command
    check = SERVICES["worker"]["healthcheck"]["test"]
    assert check[0] == "CMD" and check[1] == "helpdesk"
    assert parser.parse_args(check[2:]).check
    assert "WORKER_HEARTBEAT_FILE" in _env(SERVICES["worker"])


def test_api_port_matches_the_published_port_and_healthcheck():
    api = SERVICES["api"]
    args = build_parser().parse_args(api["command"][1:])
    published = [p.split(":") for p in api["ports"]]
    assert [int(container) for _, container in published] == [args.port]
    probe = " ".join(api["healthcheck"]["test"])
    assert f":{args.port}/health/ready" in probe


def test_runtime_role_is_not_the_owner_and_migrate_provisions_it():
    owner = urlsplit(_env(SERVICES["migrate"])["MIGRATION_DATABASE_URL"])
    provisioned = urlsplit(_env(SERVICES["migrate"])["DATABASE_URL"])
    pg = _env(SERVICES["postgres"])
    assert owner.username == pg["POSTGRES_USER"] and owner.password == pg["POSTGRES_PASSWORD"]
    for name in ("api", "worker"):
        runtime = urlsplit(_env(SERVICES[name])["DATABASE_URL"])
        assert runtime.username != owner.username
        assert (runtime.username, runtime.password) == (provisioned.username,
                                                        provisioned.password)
        assert runtime.hostname == "postgres" and runtime.path == f"/{pg['POSTGRES_DB']}"
        assert urlsplit(_env(SERVICES[name])["REDIS_URL"]).hostname == "redis"


def test_dockerfile_is_slim_non_root_with_a_dependency_layer():
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.1[1-9]-slim", text, re.M)
    user = re.findall(r"^USER (\S+)", text, re.M)
    assert user and user[-1] not in ("root", "0")
    deps = text.index("COPY pyproject.toml constraints.txt")
    assert deps < text.index("COPY api ")
    # Every package the project installs is in the image (pyproject's package list).
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = [p.rstrip("*") for p in config["tool"]["setuptools"]["packages"]["find"]["include"]]
    assert "handlers" in packages
    for package in packages:
        assert f"COPY {package} ./{package}" in text, package
    cmd = re.findall(r"^CMD (.+)$", text, re.M)[-1]
    assert shlex.split(cmd.strip("[]").replace(",", " "))[0].strip('"') == "helpdesk"


def test_readme_documents_every_setting():
    readme = (ROOT / "README.md").read_text()
    missing = [name for name in SETTINGS_ENV if f"`{name}`" not in readme]
    assert not missing, f"settings missing from the README table: {missing}"
