"""Notification templates in the sandbox: the defaults check and render; what a
template may not do (escape the sandbox, loop, make a huge value, name what its kind
lacks) is refused when it is checked, before anything huge is made; and a value
given at send time cannot split the subject into headers."""

from __future__ import annotations

import pytest

from domain.mail_templates import (
    DEFAULTS,
    KINDS,
    SAMPLES,
    MailTemplate,
    RenderFailed,
    TemplateInvalid,
    check_template,
    render,
)


def test_the_defaults_check_and_a_subject_stays_one_line():
    for kind in KINDS:
        check_template(kind, DEFAULTS[kind])
        subject, body = render(DEFAULTS[kind], SAMPLES[kind])
        assert subject and "\n" not in subject and body.endswith("\n")
    subject, _ = render(DEFAULTS["acknowledgement"],
                        {**SAMPLES["acknowledgement"], "subject": "a\r\nBcc: x@y.z\n b"})
    assert subject == "We received your request: a Bcc: x@y.z b [#a1b2c3d4e5f6g]"
    assert render(MailTemplate("a{{ '\\x07\\x00' }}b", "{{ '\\x00' }}!"), {}) == ("ab", "!")
    body = "{{ name|upper }}{% if reference %} {{ reference }}{% endif %} {{ '-' * 3 }}"
    check_template("acknowledgement", MailTemplate("Hi", body))
    assert render(MailTemplate("Hi", body), {**SAMPLES["acknowledgement"], "reference": ""}
                  ) == ("Hi", "ANN CUSTOMER ---")


@pytest.mark.parametrize(("body", "said"), [
    ("{% if %}", "does not compile"),
    ("{{ password }}", "names password"),
    ("{{ range(3) }}", "names range"),
    ("{{ name.__class__.__mro__ }}", "unsafe"),
    ("{% for i in name %}{{ i }}{% endfor %}", "uses for"),
    ("{% macro m() %}{% endmacro %}", "uses macro"),
    ("{% include 'other' %}", "uses include"),
    ("{{ 'a' * 1000000000 }}", "would make more than"),
    ("{{ 9 ** 9 ** 9 }}", "small numbers"),
    ("{{ name|center(1000000000) }}", "a number above"),
    ("{{ name.ljust(1000000000) }}", "a number above"),
    ("{{ 1 / 0 }}", "ZeroDivisionError"),
    ("{{" + "(" * 5000 + "1" + ")" * 5000 + "}}", "too deep"),
])
def test_what_a_template_may_not_do_is_refused_when_checked(body, said):
    # Refused before the huge value is made: otherwise this test would not end.
    with pytest.raises(TemplateInvalid) as info:
        check_template("acknowledgement", MailTemplate("Hi", body))
    assert said in info.value.message and info.value.field == "body"


def test_values_that_grow_a_string_beyond_bounds_fail_the_render_not_the_process():
    template = MailTemplate("Hi", "{{ (name|replace('', name))|replace('', name) }}")
    check_template("acknowledgement", template)  # short samples: fine
    with pytest.raises(RenderFailed, match="more than 4000 characters"):
        render(template, {**SAMPLES["acknowledgement"], "name": "n" * 2000})
