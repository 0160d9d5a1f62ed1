"""Rules (automation on ticket events): creating and changing them.

Each rule is an aggregate with its own stream; its ``rules`` row is written in the
same transaction as its events. The aggregate (``domain.rule``) keeps its own rules;
here are those that need the tenant's rows:

* a condition or action on a ticket field names a field the tenant defined, with a
  value of the field's type (``domain.fields.check_value``), and a note's
  ``{{fields.<key>}}`` placeholders name defined fields;
* a group a rule routes to exists, and an agent it assigns to is active and, when
  the rule routes to a group or fires only in one, a member of that group;
* a rule that sends mail has a mailbox with SMTP to send it from, and a group it
  mails exists (``handlers.rule_mail``);
* a tenant has at most ``RULES_MAX`` rules.

Every refusal is a 422 naming the part (``conditions.2.value``), and nothing is saved.
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from domain.fields import FieldCatalog, check_value, check_values
from domain.rule import (
    RULES_MAX,
    ChangeRule,
    CreateRule,
    Rule,
    decide_rule,
    evolve_rule,
)
from domain.rule_parts import Action, Condition, field_key
from domain.templates import check_template
from domain.values import Actor, ActorKind
from eventstore.store import UnitOfWork
from handlers.errors import Invalid, refused_as
from handlers.records import LockedRecords
from handlers.rule_mail import check_can_send
from projections import rules as read_model
from projections.fields import load_catalog
from projections.groups import load_group
from projections.reads import active_agent

_STAFF = Actor(kind=ActorKind.RULE, id="check")


def check_field_conditions(conditions: Sequence[Condition], catalog: FieldCatalog) -> None:
    """Each ``fields.<key>`` condition names a defined field and a value of its type."""
    for i, c in enumerate(conditions):
        key = field_key(c.field)
        if key is None:
            continue
        d = catalog.get(key)
        if d is None:
            raise Invalid("invalid_rule", f"conditions.{i}.field: {key} is not a ticket field",
                          field=f"conditions.{i}.field")
        if c.value is not None:
            with refused_as("invalid_rule", f"conditions.{i}.value"):
                check_value(d, c.value)


def check_template_fields(text: str, where: str, catalog: FieldCatalog) -> None:
    """A text's ``{{fields.<key>}}`` placeholders name defined fields."""
    for key in sorted(check_template(text, where)):
        if key not in catalog:
            raise Invalid("invalid_template", f"{where}: {{{{fields.{key}}}}} is not a "
                          "placeholder: no such ticket field", field=where)


async def check_actions_in_tenant(uow: UnitOfWork, actions: Sequence[Action],
                                  catalog: FieldCatalog, group: UUID | None,
                                  prefix: str = "actions") -> None:
    """What the actions name exists in the tenant; ``group`` is the group the ticket is
    known to be in when they run (None: unknown), for the assignee's membership."""
    conn, tenant = uow.conn, uow.tenant_id
    routed = next((UUID(a.value) for a in actions if a.type == "set_group"), group)
    mails = [i for i, a in enumerate(actions) if a.type == "send_mail"]
    for i, a in enumerate(actions):
        at = f"{prefix}.{i}.value"
        if a.type == "set_group" and await load_group(conn, tenant, UUID(a.value)) is None:
            raise Invalid("invalid_rule", f"{at}: no group {a.value}", field=at)
        if a.type == "assign" and a.value is not None:
            if not await active_agent(conn, tenant, UUID(a.value)):
                raise Invalid("invalid_rule", f"{at}: not an active agent of this tenant",
                              field=at)
            if routed is not None:
                found = await load_group(conn, tenant, routed)
                if found is not None and UUID(a.value) not in found.members:
                    raise Invalid("invalid_rule", f"{at}: the agent is not in the group "
                                  f"{routed} the ticket is in", field=at)
        if a.type == "set_fields":
            with refused_as("invalid_rule", at):
                check_values(a.value, catalog, _STAFF, {})
        if a.type == "add_note":
            check_template_fields(a.value, at, catalog)
        if (a.type == "send_mail" and a.value["to"] == "group"
                and await load_group(conn, tenant, UUID(a.value["group_id"])) is None):
            raise Invalid("invalid_rule", f"{at}.group_id: no group {a.value['group_id']}",
                          field=f"{at}.group_id")
    if mails:
        await check_can_send(uow, f"{prefix}.{mails[0]}.value")


def _group_condition(conditions: Sequence[Condition]) -> UUID | None:
    return next((UUID(c.value) for c in conditions if c.field == "group_id" and c.op == "is"),
                None)


async def _check_in_tenant(uow: UnitOfWork, rule: Rule) -> None:
    catalog = await load_catalog(uow.conn, uow.tenant_id)
    check_field_conditions(rule.conditions, catalog)
    await check_actions_in_tenant(uow, rule.actions, catalog, _group_condition(rule.conditions))


_RULES = LockedRecords(
    "rule", "rule", "invalid_rule", decide_rule, evolve_rule,
    lambda uow, i: read_model.load_rule(uow.conn, uow.tenant_id, i, for_update=True))


async def create_rule(uow: UnitOfWork, command: CreateRule) -> Rule:
    """Create a rule; 422 ``too_many_rules`` past ``RULES_MAX``."""

    async def write(uow: UnitOfWork, rule: Rule) -> None:
        await _check_in_tenant(uow, rule)
        if await read_model.count_rules(uow.conn, uow.tenant_id) >= RULES_MAX:
            raise Invalid("too_many_rules", f"a tenant has at most {RULES_MAX} rules")
        await read_model.insert_rule(uow.write, uow.tenant_id, rule)

    return await _RULES.create(uow, command, write)


async def change_rule(uow: UnitOfWork, rule_id: UUID, command: ChangeRule, *,
                      expected_version: int | None = None) -> Rule:
    """Change a rule's parts (turn it off with ``active=False``). A change to nothing
    records nothing."""

    async def write(uow: UnitOfWork, before: Rule, after: Rule) -> None:
        await _check_in_tenant(uow, after)
        await read_model.update_rule(uow.write, uow.tenant_id, after)

    return await _RULES.change(uow, rule_id, expected_version,
                               lambda state: _RULES.decided(command, state), write)


async def get_rule(uow: UnitOfWork, rule_id: UUID) -> Rule | None:
    return await read_model.load_rule(uow.conn, uow.tenant_id, rule_id)


__all__ = ["change_rule", "check_actions_in_tenant", "check_field_conditions",
           "check_template_fields", "create_rule", "get_rule"]
