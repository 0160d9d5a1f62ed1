"""Whom a reply by mail is copied to, and which addresses are the desk's own. Pure."""

from __future__ import annotations

from domain.mail import is_own_address, reply_copies

OWN = {"support@acme.test", "billing@acme.test"}


def test_own_addresses_and_their_token_forms() -> None:
    assert is_own_address("Support@ACME.test", OWN)
    assert is_own_address("support+abc123@acme.test", OWN)
    assert not is_own_address("supporter@acme.test", OWN)
    assert not is_own_address("support@acme.test.evil", OWN)
    assert not is_own_address("support@other.test", OWN)


def test_copies_leave_out_the_requester_the_desk_bounces_and_no_ones() -> None:
    candidates = ["Bob@Example.com", "ann@example.com", "support+x1@acme.test",
                  "gone@example.com", "", "slack-u1@contacts.invalid", "bob@example.com",
                  "not-an-address", "carol@example.com"]
    assert reply_copies("Ann@example.com", candidates, OWN, {"gone@example.com"}) == (
        "bob@example.com", "carol@example.com")
    assert reply_copies("ann@example.com", [], OWN, set()) == ()
