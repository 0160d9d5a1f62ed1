"""Parsing the test corpus (tests/mail/): bodies, charsets, files, and what makes a mail
automatic or a bounce. Pure: no database, no server."""

from __future__ import annotations

from pathlib import Path

import pytest

from domain.mail import (
    ORIGINAL_NAME,
    Unparseable,
    headline,
    parse,
    plus_token,
    reply_subject,
    strip_quoted,
    subject_ref,
)

CORPUS = Path(__file__).parent.parent / "mail"


def mail(name: str):  # type: ignore[no-untyped-def]
    return parse((CORPUS / name).read_bytes())


def files(name: str) -> list[tuple[str, str, bool]]:
    return [(f.name, f.content_type, f.inline) for f in mail(name).files]


def test_gmail_prefers_the_text_part_and_cuts_the_wrapped_attribution() -> None:
    m = mail("gmail.eml")
    assert m.body == "Hi,\n\nThe printer on floor 3 is on fire. Photo attached.\n\nThanks,\nAnn"
    assert (m.sender, m.sender_name, m.cc) == ("ann@example.com", "Ann Example",
                                               ("bob@example.com", "carol@example.com"))
    assert files("gmail.eml") == [("fire.png", "image/png", False),
                                  ("invite.ics", "text/calendar", False),
                                  (ORIGINAL_NAME, "message/rfc822", False)]
    assert m.files[-1].data == (CORPUS / "gmail.eml").read_bytes()
    assert m.automatic is None


def test_outlook_keeps_tnef_and_cuts_its_header_block() -> None:
    m = mail("outlook_tnef.eml")
    assert m.body == ("The invoice total is wrong: it should be 120 EUR, not 210 EUR."
                      "\n\nRegards,\nDan")
    assert files("outlook_tnef.eml")[0] == ("winmail.dat", "application/ms-tnef", False)
    assert m.automatic is None  # X-Auto-Response-Suppress is sent by people's Outlook too


def test_apple_mail_drops_the_signature_and_keeps_the_inline_image() -> None:
    m = mail("apple_mail.eml")
    assert m.body == "The login page is blank in Safari since this morning."
    assert files("apple_mail.eml")[0] == ("screen.png", "image/png", True)


def test_html_only_is_sanitized_to_text_without_its_quote() -> None:
    m = mail("html_only.eml")
    assert m.body == "My order 77 never arrived & nobody answers.\n\nPlease help."
    assert "alert" not in m.body and "color" not in m.body


def test_a_latin1_label_decodes_as_windows_1252_with_encoded_words() -> None:
    m = mail("latin1.eml")
    assert (m.subject, m.sender_name) == ("Problème de facture", "François Dürr")
    assert m.body == ("Bonjour,\n\nLa facture est fausse: 120 € et non 210 €. Très urgent."
                      "\n\nFrançois")


@pytest.mark.parametrize(("name", "reason"), [
    ("auto_reply.eml", "Auto-Submitted: auto-replied"),
    ("mailing_list.eml", "Precedence: list"),
    ("dsn_bounce.eml", "Auto-Submitted: auto-replied"),
])
def test_automatic_mail_is_recognised(name: str, reason: str) -> None:
    assert mail(name).automatic == reason


def test_a_dsn_names_the_hard_bounce() -> None:
    [bounce] = mail("dsn_bounce.eml").bounces
    assert (bounce.recipient, bounce.status, bounce.hard) == ("gone@example.com", "5.1.1", True)


def test_a_forward_keeps_what_was_forwarded() -> None:
    body = mail("forwarded.eml").body
    assert body.startswith("Forwarding this") and 'The "Buy" link' in body


def test_threading_ids_tokens_and_references() -> None:
    m = mail("reply_changed_subject.eml")
    assert m.thread_ids() == ("{OUTBOUND_ID}", "CAF=gmail-0001@mail.gmail.com")
    assert m.body == "It is out now, thanks."
    assert plus_token("support@acme.test", ("x@y.z", "support+k3j9x2ab@acme.test")) == "k3j9x2ab"
    assert plus_token("support@acme.test", ("support+k3j9x2ab@other.test",)) is None
    assert subject_ref("Re: Re: fire [#K3J9X2AB]") == "k3j9x2ab"
    assert reply_subject("RE: Fwd: fire [#k3j9x2ab]", "k3j9x2ab") == "Re: fire [#k3j9x2ab]"


def test_quotes_and_signatures_are_cut() -> None:
    assert strip_quoted("Yes.\n\n> old\n> older\n") == "Yes."
    assert strip_quoted("Yes.\n-- \nAnn\nCEO") == "Yes."


@pytest.mark.parametrize(("raw", "reason"), [
    (b"", "the message is empty"),
    (b"just words\n", "the message has no headers"),
    (b"To: a@b.c\nMessage-ID: <1@b.c>\n\nx", "the message has no From header"),
    (b"From: nobody\nMessage-ID: <1@b.c>\n\nx", "the From header names no address: 'nobody'"),
    (b"From: a@b.c\n\nx", "the message has no Message-ID"),
])
def test_unparseable_mail_says_why(raw: bytes, reason: str) -> None:
    with pytest.raises(Unparseable) as caught:
        parse(raw)
    assert caught.value.reason == reason


def test_headline_reads_what_headers_it_can() -> None:
    assert headline(b"From: =?utf-8?q?J=C3=B6rg?= <j@example.com>\r\nSubject: Hi\r\n\r\nx") == (
        "Jörg <j@example.com>", "Hi")
    assert headline(b"Subject: " + b"y" * 300 + b"\r\n\r\nx")[1] == "y" * 199 + "…"
    assert headline(b"this is not a mail at all\n") == (None, None)
    assert headline(b"") == (None, None)
