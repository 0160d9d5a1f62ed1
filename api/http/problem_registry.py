"""The problem registry: every ``code`` a problem+json answer can carry, once.

Each code has one status, a short title, a description of when it is answered and the
members its body carries beyond the RFC 9457 ones, each with one shape. The OpenAPI
document is made from it (``api.http.problem_docs``: a schema per status, one
alternative per code), ``GET /v1/meta/error-codes`` publishes it, and
tests/unit/test_problem_registry.py holds every code the code raises to it. A new
code is one row here; a new member of an existing code changes its row, for every
place that answers with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

ERROR_ITEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "One refused input: where (`loc`, e.g. `[\"body\", \"subject\"]`), why "
                   "(`msg`) and what kind of rule (`type`).",
    "required": ["loc", "msg", "type"],
    "properties": {
        "loc": {"type": "array", "items": {"type": "string"}},
        "msg": {"type": "string"},
        "type": {"type": "string"},
    },
    "additionalProperties": False,
}
ERROR_ITEM = "ProblemErrorItem"
"""Its name under ``components.schemas``."""

_ERRORS = {"type": "array", "minItems": 1,
           "items": {"$ref": f"#/components/schemas/{ERROR_ITEM}"},
           "description": "Every refused input"}
_PARAMETERS = {"type": "array", "minItems": 1, "items": {"type": "string"},
               "description": "The query parameters (or headers) at fault"}
_UUID = {"type": "string", "format": "uuid"}


@dataclass(frozen=True, slots=True)
class Member:
    """An extra member of a problem body: its JSON Schema, and whether every answer of
    the code carries it."""

    schema: Mapping[str, Any]
    required: bool = True


@dataclass(frozen=True, slots=True)
class ProblemCode:
    code: str
    status: int
    title: str
    description: str
    members: Mapping[str, Member] = field(default_factory=dict)


def _codes(*rows: ProblemCode) -> Mapping[str, ProblemCode]:
    table: dict[str, ProblemCode] = {}
    for row in rows:
        assert row.code not in table, row.code
        table[row.code] = row
    return table


ERRORS = Member(_ERRORS)
PARAMETERS = Member(_PARAMETERS)

PROBLEMS: Mapping[str, ProblemCode] = _codes(
    # 400: the request's shape
    ProblemCode("unknown_parameter", 400, "Unknown parameter",
                "A query parameter the operation does not take.", {"parameters": PARAMETERS}),
    ProblemCode("repeated_parameter", 400, "Repeated parameter",
                "A single-valued query parameter given more than once.",
                {"parameters": PARAMETERS}),
    ProblemCode("invalid_parameter", 400, "Invalid parameter",
                "A query, path or header parameter whose value is refused.",
                {"parameters": PARAMETERS, "errors": ERRORS}),
    ProblemCode("invalid_cursor", 400, "Invalid cursor",
                "A list cursor that is malformed, forged, or from another list or query."),
    ProblemCode("malformed_json", 400, "Malformed JSON", "The request body is not JSON."),
    ProblemCode("invalid_idempotency_key", 400, "Invalid Idempotency-Key",
                "An `Idempotency-Key` that is empty, too long or not visible ASCII."),
    ProblemCode("invalid_if_match", 400, "Invalid If-Match",
                'An `If-Match` that is not an ETag such as `"3"`.'),
    ProblemCode("invalid_range", 400, "Invalid range",
                "A date range that is reversed, too long or out of bounds."),
    ProblemCode("range_too_large", 400, "Range too large",
                "An audit range of more events than one verification covers.",
                {"max_seqs": Member({"type": "integer", "minimum": 1})}),
    ProblemCode("invalid_multipart", 400, "Invalid multipart body",
                "A `multipart/form-data` upload that cannot be read, or holds no file part."),
    ProblemCode("upload_interrupted", 400, "Upload interrupted",
                "The upload's body ended before its declared length; nothing was kept."),
    ProblemCode("empty_query", 400, "Empty query",
                "A search query with no word to find.", {"parameters": PARAMETERS}),
    ProblemCode("invalid_query", 400, "Invalid query",
                "A search query that cannot be searched.", {"parameters": PARAMETERS}),
    ProblemCode("query_too_long", 400, "Query too long",
                "A search query longer than the search reads.", {"parameters": PARAMETERS}),
    # 401: credentials that prove nothing
    ProblemCode("unauthorized", 401, "Unauthorized", "No bearer credential was sent."),
    ProblemCode("invalid_slack_signature", 401, "Invalid Slack signature",
                "A Slack Events API request whose `X-Slack-Signature` does not match the "
                "connection's signing secret, whose `X-Slack-Request-Timestamp` is more "
                "than five minutes from now, or that names no connection."),
    ProblemCode("invalid_api_key", 401, "Invalid API key", "The API key is unknown or revoked."),
    ProblemCode("invalid_access_token", 401, "Invalid access token",
                "The access or portal token expired, or its session ended."),
    ProblemCode("invalid_widget_token", 401, "Invalid widget token",
                "The widget session's token is unknown, expired or of another tenant."),
    ProblemCode("sign_in_failed", 401, "Sign-in failed",
                "The e-mail and password do not sign anyone in (one answer for every "
                "reason)."),
    ProblemCode("oidc_sign_in_failed", 401, "OpenID Connect sign-in refused",
                "The provider's answer does not sign anyone in to this tenant: the state, "
                "code, ID token (signature, `iss`, `aud`, `exp`, `nonce`) or e-mail "
                "(unverified, outside the allowed domain, no active agent) was refused; "
                "`reason` says which.",
                {"reason": Member({"type": "string"})}),
    ProblemCode("invalid_refresh_token", 401, "Invalid refresh token",
                "The refresh cookie is unknown, expired, used or revoked."),
    # 403: a genuine credential that may not do this
    ProblemCode("forbidden", 403, "Forbidden", "The credential's role may not run this."),
    ProblemCode("insufficient_scope", 403, "Insufficient scope",
                "The API key's role may run this, but its scopes do not name the "
                "permission it needs (`permission`).",
                {"permission": Member({"type": "string"}),
                 "scopes": Member({"type": "array", "items": {"type": "string"}})}),
    ProblemCode("agent_inactive", 403, "Agent inactive",
                "The agent this key or token acts as is deactivated."),
    ProblemCode("agent_key_unlinked", 403, "Agent key unlinked",
                "An agent key that belongs to no agent."),
    ProblemCode("origin_not_allowed", 403, "Origin not allowed",
                "A widget call from an origin the tenant does not list."),
    ProblemCode("copied_only", 403, "Copied only",
                "The signed-in contact is copied on the ticket (a CC): it reads the "
                "ticket and its public messages, and only the requester replies to it "
                "and rates it."),
    # 404
    ProblemCode("not_found", 404, "Not found", "No such resource in this tenant."),
    ProblemCode("upload_not_found", 404, "Upload not found",
                "An attachment names an upload this tenant (or this customer) does not "
                "have, or one purged unattached."),
    ProblemCode("mailbox_not_found", 404, "Mailbox not found",
                "The tenant has no such mailbox."),
    ProblemCode("oidc_not_configured", 404, "OpenID Connect not configured",
                "The tenant (slug or id) has no OpenID Connect provider."),
    ProblemCode("slack_not_connected", 404, "Slack not connected",
                "The tenant has not connected Slack."),
    ProblemCode("webhook_not_configured", 404, "Webhook not configured",
                "The tenant has no webhook endpoint."),
    ProblemCode("method_not_allowed", 405, "Method not allowed",
                "The path does not answer this method (`Allow` lists those it does)."),
    # 409
    ProblemCode("invalid_transition", 409, "Invalid transition",
                "The ticket cannot move from its state to the one asked for."),
    ProblemCode("ticket_closed", 409, "Ticket closed", "A closed ticket takes no command."),
    ProblemCode("requester_not_a_contact", 409, "Requester not a contact",
                "Only a requester who is a contact can be sent a rating link."),
    ProblemCode("ticket_not_solved", 409, "Ticket not solved",
                "Only a solved ticket can be rated; a closed one keeps its last rating."),
    ProblemCode("already_exists", 409, "Already exists", "The ticket exists already."),
    ProblemCode("mailbox_exists", 409, "Mailbox exists",
                "The tenant has a mailbox of this address already."),
    ProblemCode("slack_connected", 409, "Slack connected meanwhile",
                "Slack was connected by another request at the same time; send the change "
                "again."),
    ProblemCode("mailbox_in_use", 409, "Mailbox in use",
                "The mailbox took in or sent mail, which names it; it cannot be deleted."),
    ProblemCode("follow_up_required", 409, "Follow-up required",
                "The ticket is closed; a customer's message opens a follow-up instead."),
    ProblemCode("not_group_member", 409, "Not a group member",
                "The assignee is not a member of the ticket's group."),
    ProblemCode("ticket_merged", 409, "Ticket merged",
                "The ticket was merged into another (`merged_into`), which takes its "
                "commands now.", {"merged_into": Member(_UUID)}),
    ProblemCode("contact_merged", 409, "Contact merged",
                "The contact was merged into another one."),
    ProblemCode("version_conflict", 409, "Version conflict",
                "A concurrent change won; retry."),
    ProblemCode("idempotency_in_flight", 409, "Idempotency-Key in flight",
                "A request with this `Idempotency-Key` is still running (`Retry-After`)."),
    ProblemCode("secret_not_replayable", 409, "Secret not replayable",
                "A replay of a request whose answer held a secret this server can no "
                "longer show; the member names what the first request created.",
                {"key_id": Member(_UUID, required=False),
                 "invitation_id": Member(_UUID, required=False)}),
    ProblemCode("agent_exists", 409, "Agent exists", "An agent has this e-mail."),
    ProblemCode("contact_exists", 409, "Contact exists",
                "A contact has this e-mail (`contact_id`, when known, is who).",
                {"contact_id": Member(_UUID, required=False)}),
    ProblemCode("external_id_taken", 409, "External id taken",
                "Another contact has this external id.", {"contact_id": Member(_UUID)}),
    ProblemCode("organization_exists", 409, "Organization exists",
                "An organization has this name (`organization_id`, when known, is which).",
                {"organization_id": Member(_UUID, required=False)}),
    ProblemCode("domain_taken", 409, "Domain taken",
                "Another organization has one of these domains (which, when known).",
                {"organization_id": Member(_UUID, required=False),
                 "domain": Member({"type": "string"}, required=False)}),
    ProblemCode("group_exists", 409, "Group exists",
                "A group has this name (`group_id`, when known, is which).",
                {"group_id": Member(_UUID, required=False)}),
    ProblemCode("sla_settings_superseded", 409, "SLA settings superseded",
                "The tenant's SLA clocks run on its SLA policies (`/v1/sla-policies`, "
                "`/v1/calendars`): a change of the settings' SLA targets (`fields` names "
                "them) would set no clock.",
                {"fields": Member({"type": "array", "minItems": 1,
                                   "items": {"type": "string",
                                             "enum": ["sla_targets", "group_sla_targets"]}})}),
    ProblemCode("calendar_in_use", 409, "Calendar in use",
                "SLA policies run on the calendar (`policies` names them): give them "
                "another calendar before deleting it.",
                {"policies": Member({"type": "array", "minItems": 1, "items": {
                    "type": "object", "required": ["id", "name"],
                    "properties": {"id": _UUID, "name": {"type": "string"}},
                    "additionalProperties": False}})}),
    ProblemCode("sla_policy_is_default", 409, "Default SLA policy",
                "The default SLA policy, which every ticket no other policy matches falls "
                "back to, is not deleted; change its targets instead."),
    ProblemCode("sla_policy_changed", 409, "SLA policy changed",
                "A new order of the SLA policies names a version of a policy that is not "
                "its version now (`policy_id`, `current_version`): read them again.",
                {"policy_id": Member(_UUID), "current_version": Member({"type": "integer"})}),
    ProblemCode("too_many_fields", 409, "Too many fields",
                "The tenant has as many ticket fields as it may."),
    ProblemCode("erasure_unavailable", 409, "Erasure unavailable",
                "The contact's personal data cannot be erased here (no data key)."),
    ProblemCode("upload_attached", 409, "Upload attached",
                "The upload is attached to a message already; upload the file again."),
    ProblemCode("files_unavailable", 409, "Files unavailable",
                "Files need sealing with a data key, which this server lacks."),
    # 410
    ProblemCode("invitation_gone", 410, "Invitation gone",
                "The invitation expired or was spent."),
    ProblemCode("rating_link_gone", 410, "Rating link gone",
                "The satisfaction rating link expired or was spent."),
    ProblemCode("link_gone", 410, "Link gone", "The portal password link expired or was spent."),
    ProblemCode("contact_erased", 410, "Contact erased", "The contact was erased."),
    ProblemCode("subject_erased", 410, "Subject erased",
                "The command would write about a contact erased meanwhile."),
    ProblemCode("attachment_erased", 410, "Attachment erased",
                "The file was erased with its contact."),
    # 412
    ProblemCode("precondition_failed", 412, "Precondition failed",
                "`If-Match` names a version the resource is not at.",
                {"current_version": Member({"type": "integer", "minimum": 0})}),
    ProblemCode("body_too_large", 413, "Body too large",
                "The request body is larger than the server takes."),
    ProblemCode("file_too_large", 413, "File too large",
                "An upload over the tenant's `attachments.max_file_bytes`.",
                {"limit": Member({"type": "string", "enum": ["attachments.max_file_bytes"]}),
                 "max_file_bytes": Member({"type": "integer", "minimum": 1})}),
    ProblemCode("unsupported_media_type", 415, "Unsupported media type",
                "A request body that is not `application/json`."),
    ProblemCode("range_not_satisfiable", 416, "Range not satisfiable",
                "A `Range` that starts beyond the file (`Content-Range` gives its size)."),
    # 422: the body
    ProblemCode("validation_failed", 422, "Validation failed",
                "The request body breaks the schema or a rule.", {"errors": ERRORS}),
    ProblemCode("idempotency_key_reused", 422, "Idempotency-Key reused",
                "The `Idempotency-Key` was used with another request."),
    ProblemCode("invalid_reason", 422, "Invalid reason", "An erasure needs a reason.",
                {"errors": ERRORS}),
    ProblemCode("excess_scopes", 422, "Excess scopes",
                "An API key's `scopes` name permissions its role does not hold, or that "
                "the credential issuing it does not hold (`excess`).",
                {"errors": ERRORS,
                 "excess": Member({"type": "array", "minItems": 1,
                                   "items": {"type": "string"}})}),
    ProblemCode("unknown_agent", 422, "Unknown agent",
                "The body names an agent that is not an active agent of the tenant.",
                {"errors": ERRORS}),
    ProblemCode("unknown_contact", 422, "Unknown contact",
                "The body names a contact the tenant does not have.", {"errors": ERRORS}),
    ProblemCode("unknown_group", 422, "Unknown group",
                "The body names a group the tenant does not have.", {"errors": ERRORS}),
    ProblemCode("unknown_organization", 422, "Unknown organization",
                "The body names an organization the tenant does not have.",
                {"errors": ERRORS}),
    ProblemCode("empty_file", 422, "Empty file",
                "An upload of no bytes.", {"errors": ERRORS}),
    ProblemCode("invalid_file_name", 422, "Invalid file name",
                "A file name with a path, control or bidirectional characters, or too long.",
                {"errors": ERRORS}),
    ProblemCode("invalid_content_type", 422, "Invalid content type",
                "A `Content-Type` that is not a media type.", {"errors": ERRORS}),
    ProblemCode("type_mismatch", 422, "Type mismatch",
                "The declared type is contradicted by the file's bytes.", {"errors": ERRORS}),
    ProblemCode("too_many_attachments", 422, "Too many attachments",
                "More files on one message than the tenant's `attachments.per_message`.",
                {"errors": ERRORS}),
    ProblemCode("not_inline", 422, "Not shown inline",
                "`disposition=inline` for a file that is not a png, jpeg, gif or webp image.",
                {"parameters": PARAMETERS}),
    ProblemCode("duplicate_attachment", 422, "Duplicate attachment",
                "The same upload named twice.", {"errors": ERRORS}),
    ProblemCode("invalid_rule", 422, "Invalid rule",
                "A rule's condition, action or trigger is refused (`errors` names the part).",
                {"errors": ERRORS}),
    ProblemCode("too_many_rules", 422, "Too many rules",
                "The tenant has as many rules as it may (500).",
                {"errors": ERRORS}),
    ProblemCode("invalid_calendar", 422, "Invalid calendar",
                "A calendar's hours are refused: overlapping or inverted shifts, an "
                "unknown zone, a holiday outside the years 1-9999 (`errors` names the "
                "part).", {"errors": ERRORS}),
    ProblemCode("too_many_calendars", 422, "Too many calendars",
                "The tenant has as many calendars as it may (100).", {"errors": ERRORS}),
    ProblemCode("invalid_sla_policy", 422, "Invalid SLA policy",
                "An SLA policy's condition, target or calendar is refused, or the "
                "policies would have no default (`errors` names the part).",
                {"errors": ERRORS}),
    ProblemCode("invalid_sla_policy_order", 422, "Invalid SLA policy order",
                "A new order of the SLA policies that does not name each of the tenant's "
                "policies exactly once, or does not put the default last (`errors` names "
                "the part).", {"errors": ERRORS}),
    ProblemCode("too_many_sla_policies", 422, "Too many SLA policies",
                "The tenant has as many SLA policies as it may (200).", {"errors": ERRORS}),
    ProblemCode("invalid_macro", 422, "Invalid macro",
                "A macro's actions or text are refused (`errors` names the part).",
                {"errors": ERRORS}),
    ProblemCode("invalid_template", 422, "Invalid template",
                "A reply or note template names a placeholder that does not exist.",
                {"errors": ERRORS}),
    ProblemCode("invalid_view", 422, "Invalid view",
                "A saved view is refused (`errors` names the part).",
                {"errors": ERRORS}),
    ProblemCode("invalid_view_filter", 422, "Invalid view filter",
                "A saved view's filters that the ticket list refuses (`list_code` is the "
                "list's own code).",
                {"errors": Member(_ERRORS, required=False),
                 "list_code": Member({"type": "string"}, required=False)}),
    ProblemCode("no_agent", 422, "No agent",
                "A personal macro or view asked for by a key that acts as no agent."),
    ProblemCode("too_many_sign_in_attempts", 429, "Too many sign-in attempts",
                "Sign-ins for this account or from this address are paused after too many "
                "failures (`Retry-After`)."),
    ProblemCode("rate_limited", 429, "Rate limited",
                "Too many requests (`Retry-After`, `RateLimit`)."),
    ProblemCode("internal_error", 500, "Internal error", "A fault of the server."),
    ProblemCode("corrupt_stream", 500, "Corrupt stream",
                "Stored events cannot be folded: a fault or tampering."),
    ProblemCode("broken_blob", 500, "Broken file",
                "A stored file does not open or is cut short: a fault or tampering."),
    ProblemCode("oidc_provider_unavailable", 502, "OpenID Connect provider unavailable",
                "The tenant's OpenID Connect provider could not be reached, or answered "
                "something unusable (its discovery document, keys or token endpoint)."),
    ProblemCode("database_unavailable", 503, "Database unavailable",
                "The database cannot be reached; retry shortly (`Retry-After`)."),
    ProblemCode("data_key_mismatch", 503, "Data key mismatch",
                "This server's key-encryption key does not open the tenant's data keys."),
    ProblemCode("tenant_read_only", 503, "Tenant read-only",
                "Writes to this tenant are paused while it moves to another database; "
                "reads go on. Retry after `Retry-After` seconds."),
    ProblemCode("storage_unavailable", 503, "File storage unavailable",
                "The file storage cannot be reached; retry shortly (`Retry-After`)."),
)
"""Every problem code, by code."""


def codes_of(status: int) -> list[ProblemCode]:
    """The codes answered with ``status``, in the registry's order."""
    return [p for p in PROBLEMS.values() if p.status == status]


def published() -> list[dict[str, Any]]:
    """The registry as ``GET /v1/meta/error-codes`` sends it."""
    return [{"code": p.code, "status": p.status, "title": p.title,
             "description": p.description} for p in PROBLEMS.values()]


__all__ = ["ERROR_ITEM", "ERROR_ITEM_SCHEMA", "PROBLEMS", "Member", "ProblemCode", "codes_of",
           "published"]
