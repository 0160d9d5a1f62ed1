"""Apply numbered SQL migrations, and set up the roles they rely on.

Roles (cluster-wide, created if missing, never dropped):

- ``helpdesk_owner``: NOLOGIN, owns every object; migrations run ``SET ROLE`` to it.
- ``helpdesk_runtime``: NOLOGIN group holding the runtime grants.
- the runtime login role named by ``DATABASE_URL``: ``NOSUPERUSER NOBYPASSRLS``,
  member of ``helpdesk_runtime`` only, owns nothing.

The connection used here must be able to create roles and grant on the database
(a superuser, as in docker compose and the embedded server).

Extensions: a migration that needs one says so in a line of its own,
``-- requires extension: NAME``; the runner creates it (if missing) as the connecting
role, in the migration's own transaction, before it acts as the owner, who may not
create extensions. Only extensions that Postgres marks trusted are accepted, so a
migration cannot ask for more than a database owner could install.

Concurrency: a session advisory lock serialises runners on one database, so two
processes migrating at once apply each file exactly once. Every applied file's
sha256 is recorded; an applied file that was edited afterwards is an error.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import asyncpg

SQL_DIR = Path(__file__).with_name("sql")
OWNER_ROLE = "helpdesk_owner"
RUNTIME_GROUP = "helpdesk_runtime"
LOCK_KEY = 0x6865_6C70_6465_736B  # "helpdesk"
_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_ROLE_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_REQUIRES = re.compile(r"^-- requires extension: ([a-z_][a-z0-9_]{0,62})\s*$", re.MULTILINE)


class MigrationError(Exception):
    """A migration could not be applied, or the applied history does not match the files."""


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str
    checksum: str


def discover(sql_dir: Path = SQL_DIR) -> list[Migration]:
    """The migration files in order; refuses duplicate numbers and stray names."""
    found: list[Migration] = []
    for path in sorted(sql_dir.glob("*.sql")):
        m = _FILE.match(path.name)
        if m is None:
            raise MigrationError(f"{path.name}: migration files are named NNNN_name.sql")
        data = path.read_bytes()
        found.append(Migration(int(m.group(1)), path.stem, data.decode("utf-8"),
                               hashlib.sha256(data).hexdigest()))
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise MigrationError(f"two migration files share a number: {versions}")
    return found


def quote_ident(name: str) -> str:
    if not _ROLE_NAME.match(name):
        raise MigrationError(f"unsupported role name {name!r}")
    return '"' + name + '"'


_ROLE_TRIES = 8


async def _on_roles(conn: asyncpg.Connection, statement: str) -> None:
    """Run one statement on a role (each in a transaction of its own, never inside a
    migration's). Roles are cluster-wide while the advisory lock is per database, so
    two databases of one server migrating at once may update the same role's row at
    the same moment; Postgres then refuses the second with "tuple concurrently
    updated". The other statement commits at once, so trying again after it succeeds.
    """
    for attempt in range(_ROLE_TRIES):
        try:
            await conn.execute(statement)
            return
        except asyncpg.InternalServerError as exc:
            if "concurrently" not in str(exc) or attempt == _ROLE_TRIES - 1:
                raise
            await asyncio.sleep(0.02 * (attempt + 1) * (1 + random.random()))


async def _ensure_role(conn: asyncpg.Connection, name: str, attributes: str) -> None:
    # Two databases migrating at once may also race to create the same role, which is
    # harmless: the loser alters the winner's.
    exists = await conn.fetchval("SELECT 1 FROM pg_roles WHERE rolname = $1", name)
    if exists:
        await _on_roles(conn, f"ALTER ROLE {quote_ident(name)} {attributes}")
        return
    try:
        await conn.execute(f"CREATE ROLE {quote_ident(name)} {attributes}")
    except (asyncpg.DuplicateObjectError, asyncpg.UniqueViolationError):
        await _on_roles(conn, f"ALTER ROLE {quote_ident(name)} {attributes}")


async def ensure_roles(conn: asyncpg.Connection) -> None:
    """Create the owner and runtime group roles and give them the schema."""
    await _ensure_role(conn, OWNER_ROLE, "NOLOGIN NOSUPERUSER NOBYPASSRLS")
    await _ensure_role(conn, RUNTIME_GROUP, "NOLOGIN NOSUPERUSER NOBYPASSRLS")
    me = await conn.fetchval("SELECT current_user")
    is_super = await conn.fetchval("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
    if not is_super:
        await _on_roles(conn, f"GRANT {OWNER_ROLE} TO {quote_ident(me)}")
    await conn.execute(f"GRANT USAGE, CREATE ON SCHEMA public TO {OWNER_ROLE}")
    await conn.execute(f"GRANT USAGE ON SCHEMA public TO {RUNTIME_GROUP}")


async def ensure_extensions(conn: asyncpg.Connection, sql: str) -> None:
    """Create the extensions ``sql`` declares (``-- requires extension: NAME``)."""
    for name in _REQUIRES.findall(sql):
        trusted = await conn.fetchval(
            "SELECT bool_and(trusted) FROM pg_available_extension_versions WHERE name = $1",
            name)
        if not trusted:
            raise MigrationError(f"extension {name!r} is not available here as a trusted "
                                 "extension")
        await conn.execute(f"CREATE EXTENSION IF NOT EXISTS {quote_ident(name)}")


async def ensure_runtime_login(
    conn: asyncpg.Connection, user: str, password: str | None
) -> None:
    """Create or update the runtime login role: no superuser, no BYPASSRLS, owns nothing."""
    if user in (OWNER_ROLE, RUNTIME_GROUP) or user == await conn.fetchval("SELECT current_user"):
        raise MigrationError(
            f"the runtime role {user!r} must differ from the migration and owner roles"
        )
    attrs = "LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE INHERIT"
    await _ensure_role(conn, user, attrs)
    if password:
        # ALTER ROLE takes no bind parameters; quote the literal by doubling quotes
        # (standard_conforming_strings is on in every supported Postgres).
        literal = "'" + password.replace("'", "''") + "'"
        await _on_roles(conn, f"ALTER ROLE {quote_ident(user)} PASSWORD {literal}")
    await _on_roles(conn, f"GRANT {RUNTIME_GROUP} TO {quote_ident(user)}")


_HISTORY = f"""
CREATE TABLE IF NOT EXISTS schema_migrations (
    version     integer PRIMARY KEY,
    name        text NOT NULL,
    checksum    text NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE schema_migrations OWNER TO {OWNER_ROLE};
GRANT SELECT ON schema_migrations TO {RUNTIME_GROUP};
"""


async def migrate(
    dsn: str,
    *,
    runtime_user: str | None = None,
    runtime_password: str | None = None,
    log: Callable[[str], None] = lambda _msg: None,
    sql_dir: Path = SQL_DIR,
) -> list[str]:
    """Apply every pending migration; return the names applied (empty when up to date)."""
    migrations = discover(sql_dir)
    conn: asyncpg.Connection = await asyncpg.connect(dsn, timeout=10)
    applied_now: list[str] = []
    try:
        await conn.execute("SELECT pg_advisory_lock($1)", LOCK_KEY)
        try:
            await ensure_roles(conn)
            await conn.execute(_HISTORY)
            applied = {
                r["version"]: r
                for r in await conn.fetch("SELECT version, name, checksum FROM schema_migrations")
            }
            unknown = sorted(set(applied) - {m.version for m in migrations})
            if unknown:
                raise MigrationError(f"the database has migrations this code lacks: {unknown}")
            for m in migrations:
                done = applied.get(m.version)
                if done is not None:
                    if done["checksum"] != m.checksum or done["name"] != m.name:
                        raise MigrationError(
                            f"{m.name}.sql was changed after it was applied "
                            f"(recorded {done['name']} sha256 {done['checksum'][:12]}…, "
                            f"file has {m.checksum[:12]}…); write a new migration instead"
                        )
                    continue
                async with conn.transaction():
                    try:
                        await ensure_extensions(conn, m.sql)
                        await conn.execute(f"SET LOCAL ROLE {OWNER_ROLE}")
                        await conn.execute(m.sql)
                    except asyncpg.PostgresError as exc:
                        raise MigrationError(f"{m.name}.sql failed: {exc}") from exc
                    await conn.execute(
                        "INSERT INTO schema_migrations (version, name, checksum) "
                        "VALUES ($1, $2, $3)", m.version, m.name, m.checksum,
                    )
                applied_now.append(m.name)
                log(f"applied {m.name}")
            if runtime_user:
                await ensure_runtime_login(conn, runtime_user, runtime_password)
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", LOCK_KEY)
    finally:
        await conn.close()
    return applied_now
