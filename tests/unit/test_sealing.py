"""Personal fields sealed per field with the subject's key: they open in place, not
when moved to another event or field, and show as erased without the key."""

from __future__ import annotations

import copy
import os
import uuid

from domain.mapper import from_stored
from domain.personal import declared_subject, paths_in, personal_paths
from eventstore.sealing import Place, is_sealed, open_sealed, seal, sealed_paths, subjects

TENANT, STREAM, CONTACT = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
KEY = os.urandom(32)
OPENED = {"ticket_id": str(STREAM), "subject": "Refund for Ada", "body": "My card 4242",
          "requester": {"email": "ada@example.com", "name": "Ada", "contact_id": str(CONTACT)},
          "priority": "normal", "tags": []}


def test_the_personal_fields_are_declared_for_contacts_tickets_and_messages():
    assert ("email",) in personal_paths("ContactCreated")
    assert ("external_id",) in personal_paths("ContactUpdated")
    assert set(personal_paths("TicketOpened")) >= {("subject",), ("body",),
                                                   ("requester", "email")}
    assert personal_paths("MessageAdded") == (("body",),)
    assert personal_paths("TicketAssigned") == ()
    assert declared_subject("TicketOpened", STREAM, OPENED) == CONTACT
    assert declared_subject("ContactCreated", CONTACT, {"email": "x"}) == CONTACT
    assert declared_subject("MessageAdded", STREAM, {"body": "x"}) is None


def test_sealed_fields_hold_no_plaintext_and_open_in_place():
    place = Place(TENANT, STREAM, 1)
    sealed = seal(OPENED, personal_paths("TicketOpened"), place, CONTACT, KEY)
    text = repr(sealed)
    for secret in ("Refund", "4242", "ada@example.com", "'Ada'"):
        assert secret not in text
    assert sealed["priority"] == "normal"
    assert sealed["requester"]["contact_id"] == str(CONTACT)
    assert subjects(sealed) == {CONTACT}
    opened, broken = open_sealed(sealed, place, {CONTACT: KEY})
    assert opened == OPENED and broken == []
    # Same text, fresh nonce: two seals differ.
    again = seal(OPENED, personal_paths("TicketOpened"), place, CONTACT, KEY)
    assert again["subject"] != sealed["subject"] and again["body"] != sealed["body"]


def test_without_the_key_each_field_shows_as_erased():
    place = Place(TENANT, STREAM, 1)
    sealed = seal(OPENED, personal_paths("TicketOpened"), place, CONTACT, KEY)
    opened, broken = open_sealed(sealed, place, {CONTACT: None})
    assert opened["subject"] == {"erased": True} and opened["body"] == {"erased": True}
    assert opened["requester"]["email"] == {"erased": True}
    assert broken == []


def test_a_ciphertext_moved_to_another_event_or_field_is_reported_never_shown():
    place = Place(TENANT, STREAM, 1)
    sealed = seal(OPENED, personal_paths("TicketOpened"), place, CONTACT, KEY)
    # Another version of the same stream.
    elsewhere = Place(TENANT, STREAM, 2)
    opened, broken = open_sealed(sealed, elsewhere, {CONTACT: KEY})
    assert len(broken) == 4 and opened["body"] == {"unreadable": True}
    # Another field of the same event.
    swapped = copy.deepcopy(sealed)
    swapped["subject"], swapped["body"] = sealed["body"], sealed["subject"]
    opened, broken = open_sealed(swapped, place, {CONTACT: KEY})
    assert {b.path for b in broken} == {("subject",), ("body",)}
    assert opened["subject"] == {"unreadable": True}
    assert "Refund" not in repr(opened) and "4242" not in repr(opened)
    # Another tenant.
    opened, broken = open_sealed(sealed, Place(uuid.uuid4(), STREAM, 1),
                                 {CONTACT: KEY})
    assert len(broken) == 4


def test_a_reader_finds_sealed_values_wherever_they_stand():
    data = {"fields": {"vip_note": "Ada is a VIP", "plan": "gold"}, "body": "hello"}
    place = Place(TENANT, STREAM, 3)
    sealed = seal(data, [("fields", "vip_note"), ("body",)], place, CONTACT, KEY)
    assert sealed["fields"]["plan"] == "gold" and is_sealed(sealed["fields"]["vip_note"])
    assert set(sealed_paths(sealed)) == {("fields", "vip_note"), ("body",)}
    assert subjects(sealed) == {CONTACT}
    opened, broken = open_sealed(sealed, place, {CONTACT: KEY})
    assert opened == data and broken == []
    assert subjects(data) == set() and list(sealed_paths(data)) == []


def test_absent_and_null_fields_are_left_alone():
    data = {"email": "x@example.com", "name": None}
    sealed = seal(data, personal_paths("ContactCreated"), Place(TENANT, CONTACT, 1), CONTACT, KEY)
    assert is_sealed(sealed["email"]) and sealed["name"] is None and "phone" not in sealed


def test_the_names_of_a_messages_files_are_sealed_inside_their_list():
    files = [{"id": str(uuid.uuid4()), "name": f"passport-ada-{n}.png", "size": 10,
              "type": "image/png", "sha256": "ab" * 32} for n in range(2)]
    message = {"message_id": str(uuid.uuid4()), "body": "scans", "attachments": files}
    paths = paths_in("MessageAdded", message)
    assert paths == (("body",), ("attachments", "0", "name"), ("attachments", "1", "name"))
    place = Place(TENANT, STREAM, 3)
    sealed = seal(message, paths, place, CONTACT, KEY)
    assert "passport" not in repr(sealed) and sealed["attachments"][1]["size"] == 10
    assert list(sealed_paths(sealed)) == list(paths)
    assert message["attachments"][0]["name"] == "passport-ada-0.png"  # not changed
    opened, broken = open_sealed(sealed, place, {CONTACT: KEY})
    assert opened == message and broken == []
    erased, _ = open_sealed(sealed, place, {CONTACT: None})
    assert [f["name"] for f in erased["attachments"]] == [{"erased": True}] * 2
    assert [f["sha256"] for f in erased["attachments"]] == ["ab" * 32] * 2
    # Erased, the event still reads: an empty name, as any erased text.
    event = from_stored("MessageAdded", 1, {**erased, "visibility": "public",
                                             "author": {"kind": "agent", "id": "a"},
                                             "clocks": {}, "at": "2026-06-01T09:00:00.000000Z"})
    assert [a.name for a in event.attachments] == ["", ""]
