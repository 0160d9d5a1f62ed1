"""The rich demo tenant: Tidewater, a booking and invoicing service for small practices,
and six weeks of its support desk.

Fifty tickets from twenty-five stories. Between them they cover every state, priority
and source, with internal notes, reassignments, priority changes, first-response,
next-reply and resolution breaches, a reopening by a customer and one by an agent,
and a customer writing again on a closed ticket (a follow-up). Where a ticket ends
up follows from its story and its age: the sweep solves what stays pending a week and
closes what stays solved four days, as it would on a real desk.
"""

from __future__ import annotations

from domain.values import Priority, Role, Source, TicketState
from handlers.demo.plan import (
    Agent,
    Customer,
    MachineKey,
    Organization,
    Placement,
    Plan,
    Story,
    assign,
    customer,
    move,
    note,
    reply,
    reprioritise,
    retag,
)

OPEN, PENDING, ON_HOLD, SOLVED = (TicketState.OPEN, TicketState.PENDING, TicketState.ON_HOLD,
                                  TicketState.SOLVED)
LOW, NORMAL, HIGH, URGENT = Priority.LOW, Priority.NORMAL, Priority.HIGH, Priority.URGENT
API, EMAIL, PORTAL, CHAT, PHONE = (Source.API, Source.EMAIL, Source.PORTAL, Source.CHAT,
                                   Source.PHONE)

AGENTS = (
    Agent("priya", "Priya Raman", "priya.raman@tidewater.example", Role.ADMIN, ()),
    Agent("jonas", "Jonas Weber", "jonas.weber@tidewater.example", Role.AGENT, ("technical",)),
    Agent("aiko", "Aiko Tanaka", "aiko.tanaka@tidewater.example", Role.AGENT, ("technical",)),
    Agent("lucas", "Lucas Moreau", "lucas.moreau@tidewater.example", Role.AGENT, ("billing",)),
    Agent("sofia", "Sofia Alvarez", "sofia.alvarez@tidewater.example", Role.AGENT,
          ("accounts", "billing")),
)

KEYS = (
    MachineKey(Role.INTAKE, "Mail and portal intake"),
    MachineKey(Role.ANALYST, "Support analytics"),
    MachineKey(Role.AUDITOR, "Compliance audit"),
)

ORGANIZATIONS = (
    Organization("Brightwater Bakery", "brightwater-bakery.example"),
    Organization("Kestrel Logistics", "kestrel-logistics.example"),
    Organization("Oakline Dental", "oakline-dental.example"),
    Organization("Lumen Architects", "lumen-architects.example"),
    Organization("Parcelpoint", "parcelpoint.example"),
)

CUSTOMERS = {
    "mara": Customer("Mara Lind", "mara.lind@brightwater-bakery.example", "Brightwater Bakery"),
    "olu": Customer("Olu Adeyemi", "olu@brightwater-bakery.example", "Brightwater Bakery"),
    "hannah": Customer("Hannah Okafor", "h.okafor@kestrel-logistics.example",
                       "Kestrel Logistics"),
    "pieter": Customer("Pieter de Vries", "pieter.devries@kestrel-logistics.example",
                       "Kestrel Logistics"),
    "ines": Customer("Ines Carvalho", "ines.carvalho@kestrel-logistics.example",
                     "Kestrel Logistics"),
    "samuel": Customer("Samuel Reyes", "dr.reyes@oakline-dental.example", "Oakline Dental"),
    "tereza": Customer("Tereza Novak", "frontdesk@oakline-dental.example", "Oakline Dental"),
    "felix": Customer("Felix Brandt", "felix@lumen-architects.example", "Lumen Architects"),
    "amara": Customer("Amara Osei", "amara.osei@lumen-architects.example", "Lumen Architects"),
    "wei": Customer("Wei Chen", "wei.chen@parcelpoint.example", "Parcelpoint"),
    "rosa": Customer("Rosa Martins", "rosa@parcelpoint.example", "Parcelpoint"),
    "jamie": Customer("Jamie Fox", "jamie.fox@mailbox.example"),
    "kenji": Customer("Kenji Ito", "k.ito@mailbox.example"),
}

STORIES = {
    "login_outage": Story(
        "Nobody in our office can sign in",
        "Since this morning every one of us gets 'Something went wrong' after entering the "
        "password. We have patients arriving at ten.",
        "technical", URGENT, PHONE, ("login", "outage"), (
            assign("3m"),
            note("5m", "Status page shows EU-2 sign-in degraded since 08:40. Linking this "
                       "to incident INC-2291."),
            reply("12m", "Thanks for calling. We can confirm sign-in failures for accounts "
                         "in our EU region; engineers are on it and I'll update you within "
                         "the hour."),
            customer("35m", "Still failing for three of us. Is there any workaround?"),
            reply("20m", "The fix is rolling out now. If you still see the error in 15 "
                         "minutes, sign out of every tab and clear the cookies for "
                         "app.tidewater.example."),
            customer("25m", "Works again for everyone. Thanks for the quick help!"),
            move("5m", SOLVED),
        )),
    "invoice_vat": Story(
        "Invoice shows the wrong VAT rate",
        "Our invoice to Meyer GmbH shows 19% VAT but they are registered in Austria. "
        "How do we fix this?",
        "billing", NORMAL, EMAIL, ("invoices", "tax"), (
            assign("1h"),
            reply("2h", "The VAT rate comes from the client's country in their profile. "
                        "Meyer GmbH is set to Germany, so 19% applies. Change the country "
                        "and add their VAT ID; new invoices will use the right rate."),
            customer("1d", "Changed it, thanks. But the invoices we already sent still "
                           "show 19%."),
            note("20m", "Issued invoices are immutable (legal requirement): credit notes, "
                        "not edits."),
            reply("25m", "Invoices that were issued can't be edited, by law. Open the "
                         "invoice, choose 'Credit note', then issue a new invoice with "
                         "the corrected details."),
            move("1m", PENDING, "waiting for the customer to issue credit notes"),
            customer("2d", "All done, the credit notes went out. Thanks for explaining."),
            move("1h", SOLVED),
        )),
    "export_timeout": Story(
        "CSV export times out for long date ranges",
        "Exporting appointments for the whole year fails after half a minute with "
        "'Gateway timeout'.",
        "technical", HIGH, PORTAL, ("export", "performance"), (
            assign("3h"),
            reply("1h", "Sorry for the slow answer, we had a busy morning. I can reproduce "
                        "it: exports over about 90 days run into our 30-second limit. Until "
                        "it's fixed, exporting one quarter at a time works."),
            note("40m", "Filed ENG-812: the export query skips the date index for ranges "
                        "over 90 days."),
            move("5m", ON_HOLD, "waiting for the engineering fix ENG-812"),
            move("3d", OPEN, "ENG-812 deployed"),
            reply("10m", "Good news: the fix for long exports is live; a full year now "
                         "exports in a few seconds."),
            move("2m", SOLVED),
        )),
    "card_declined": Story(
        "Card declined when renewing our subscription",
        "The renewal failed and the app says our plan expires in 3 days.",
        "billing", HIGH, CHAT, ("billing", "payments"), (
            assign("2m"),
            reply("8m", "Sorry about that. Could you tell me the last four digits of the "
                        "card and the exact error you see?"),
            customer("6m", "Ends in 4242. It just says 'Your card was declined'. A second "
                           "card gives the same."),
            note("4m", "Payment provider log: the issuer answered 'do_not_honor' for both "
                       "attempts. Nothing on our side."),
            reply("6m", "Your bank declined both payments, so the block is on their side. "
                        "Please call the number on the back of the card, or switch to bank "
                        "transfer under Settings > Billing."),
            move("1m", PENDING, "waiting for the customer's bank"),
        )),
    "reset_email": Story(
        "Password reset e-mail never arrives",
        "I requested a password reset three times; nothing arrives, not even in spam.",
        "technical", NORMAL, EMAIL, ("login", "email"), (
            assign("30m"),
            reply("1h30m", "Our logs show the reset e-mail was delivered to your mail "
                           "server at 09:14. Could you check the quarantine? It comes from "
                           "no-reply@tidewater.example."),
            customer("3h", "Found it in the quarantine, our IT released it. I'm in."),
            move("10m", SOLVED),
            customer("1d", "Sorry, it happens again for my colleague Tom. Nothing arrives."),
            note("15m", "Their mail gateway quarantines our sender: they need an allow-list "
                        "entry, not another resend."),
            reply("45m", "Your mail gateway is quarantining our messages. Please ask IT to "
                         "allow-list no-reply@tidewater.example; then every reset e-mail "
                         "will arrive."),
            customer("4h", "IT added it and Tom is in too. Thanks!"),
            move("10m", SOLVED),
        )),
    "dark_mode": Story(
        "Feature request: dark mode",
        "We work late shifts; a dark theme would be much easier on the eyes.",
        "technical", LOW, PORTAL, ("feature-request",), (
            reply("20h", "Thanks for the suggestion! Dark mode is one of our most requested "
                         "ideas; I've added your vote and we'll announce it in the "
                         "changelog."),
            note("2m", "Added a vote to FR-104 (now 37 votes)."),
            move("1m", SOLVED),
        )),
    "offboarding": Story(
        "Please delete a former employee's account",
        "Paula Alves left us last month. Please remove her user and her data.",
        "accounts", NORMAL, EMAIL, ("accounts", "gdpr"), (
            assign("2h"),
            note("5m", "Only an account owner may ask for a user's deletion: verify first."),
            reply("10m", "We can do that. As it deletes personal data, could the account "
                         "owner confirm by replying from their own address?"),
            move("1m", PENDING, "waiting for the account owner's confirmation"),
            customer("5h", "This is the owner confirming: please delete the user p.alves "
                           "and her data."),
            reply("1h", "Done: p.alves is removed and her personal data erased. Past "
                        "appointments remain, without her name."),
            move("2m", SOLVED),
        )),
    "rate_limit": Story(
        "API returns 429 during our nightly sync",
        "Our integration syncs appointments every night and gets HTTP 429 for about a "
        "third of the requests.",
        "technical", NORMAL, API, ("api", "integration"), (
            assign("1h"),
            reply("2h", "Your nightly sync sends about 20 requests per second and the limit "
                        "is 10. The answers carry a Retry-After header: waiting that long "
                        "before retrying gets every request through."),
            customer("6h", "We added the backoff, but still see bursts of 429 around "
                           "02:00."),
            reprioritise("15m", HIGH),
            note("1m", "Their payroll run depends on this sync finishing by 06:00. Raised "
                       "the priority and asked ops for a temporary limit."),
            reply("1h", "We've raised your limit to 25 requests per second for 30 days "
                        "while you tune the job."),
            customer("1d", "Last night's sync finished without a single 429. Thanks."),
            move("20m", SOLVED),
        )),
    "double_charge": Story(
        "We were charged twice this month",
        "Two identical payments of 89.00 for invoice 4471 on our card statement.",
        "billing", URGENT, PHONE, ("billing", "refunds"), (
            assign("5m"),
            note("5m", "Two captures for invoice 4471, four seconds apart: a duplicated "
                       "payment webhook."),
            reply("20m", "Thanks for calling. We found the double charge; the second "
                         "payment is refunded and reaches your account in 3 to 5 business "
                         "days."),
            move("5m", SOLVED),
            customer("6d", "The refund still hasn't arrived. Can you check?"),
            reply("1h", "I checked with our payment provider: the refund went out with "
                        "reference RF-2231 and your bank should show it tomorrow. Sorry "
                        "for the wait."),
            move("10m", SOLVED),
        )),
    "calendar_sync": Story(
        "Appointments not syncing to Google Calendar",
        "Since last week nothing shows up in our Google calendars any more.",
        "technical", HIGH, EMAIL, ("calendar", "integration"), (
            assign("30m"),
            reply("1h", "Please disconnect and reconnect Google Calendar under Settings > "
                        "Integrations: the connection's permission expired last week."),
            customer("2h", "Did that. New appointments show up, but nothing from before "
                           "today."),
            note("10m", "Known: the backfill of older appointments runs nightly at 00:00 "
                        "UTC."),
            reply("15m", "That's expected: older appointments are copied over tonight and "
                         "you'll see them tomorrow morning."),
            move("1m", PENDING, "until the nightly backfill has run"),
            customer("1d", "Everything is there now."),
            move("1h", SOLVED),
        )),
    "client_import": Story(
        "Help importing our client list",
        "We're moving from spreadsheets. How do we get 1,200 clients in?",
        "accounts", LOW, PORTAL, ("onboarding", "import"), (
            assign("4h"),
            reply("1h", "Welcome aboard! Use the CSV template from Settings > Import; dates "
                        "must be written as YYYY-MM-DD."),
            customer("1d", "The import stops at row 214: 'invalid date'."),
            reply("3h", "Row 214 has the birth date 31/02/1987, which doesn't exist. Fix "
                        "it and run the import again; nothing before it was saved, so "
                        "nothing will be doubled."),
            customer("40m", "Fixed it: 1,204 clients imported. Thank you!"),
            move("10m", SOLVED),
        )),
    "slow_dashboard": Story(
        "Dashboard takes 20 seconds to load",
        "The week view has become very slow since the weekend.",
        "technical", NORMAL, CHAT, ("performance",), (
            assign("10m"),
            reply("15m", "Thanks for reporting it. I can see the slow loads on our side too "
                         "and I'm looking into it."),
            note("2h", "Week view over 80k appointments: the query plan regressed in "
                       "release 4.12. ENG-820."),
            reply("10m", "We found the cause, a change in the last release. The fix ships "
                         "with 4.13 on Thursday."),
            move("2m", ON_HOLD, "the fix ships with release 4.13"),
            move("2d", OPEN, "4.13 released"),
            reply("5m", "4.13 is out: the dashboard should load in under two seconds again. "
                        "Could you confirm?"),
            customer("3h", "Confirmed, it's fast again."),
            move("5m", SOLVED),
        )),
    "cancel": Story(
        "How do we cancel our subscription?",
        "We'd like to cancel at the end of the month.",
        "billing", LOW, EMAIL, ("billing", "cancellation"), (
            reply("6h", "You can cancel under Settings > Plan at any time and keep access "
                        "until the end of the paid period. May we ask why you're leaving?"),
            customer("1d", "We're merging with another practice and will use their system."),
            note("10m", "The multi-location plan might keep them; flagged to sales."),
            reply("20m", "Thanks for letting us know. If you'd like to keep both locations "
                         "here, our multi-location plan may fit and I can set up a call. "
                         "Otherwise the cancellation takes effect at the end of the month."),
            move("1m", PENDING, "waiting for the customer's decision"),
        )),
    "sms_time": Story(
        "SMS reminders go out two hours early",
        "Clients get their reminder at 7 am for a 9 am appointment the next day.",
        "technical", HIGH, PHONE, ("sms", "timezone"), (
            assign("20m"),
            reply("2h40m", "Your location's time zone was set to UTC, so reminders went "
                           "out two hours early. I've set it to Europe/Lisbon; tomorrow's "
                           "reminders go out on time."),
            customer("1h", "Thanks, that explains it."),
            move("5m", SOLVED),
        )),
    "receipt_language": Story(
        "Receipts arrive in German",
        "One of our clients gets receipts in German; she only reads English.",
        "billing", LOW, EMAIL, ("invoices", "localisation"), (
            reply("5h", "Receipts use the language of each client's profile. Hers was set "
                        "to German; I've switched it to English and sent the last receipt "
                        "again."),
            move("2m", SOLVED),
        )),
    "twofa_lockout": Story(
        "Locked out after changing my phone",
        "New phone, and the authenticator codes are gone. I can't get in.",
        "accounts", URGENT, CHAT, ("login", "2fa"), (
            assign("5m"),
            reply("10m", "We can help. For your security, please reply from the account "
                         "owner's e-mail with the number of your last invoice."),
            move("1m", PENDING, "waiting for proof of ownership"),
            customer("40m", "The last invoice is INV-2031-0831."),
            note("5m", "Checked against billing: it matches. Resetting two-factor sign-in."),
            reply("10m", "Verified, thanks. Two-factor sign-in is reset: you'll set it up "
                         "again at your next sign-in."),
            move("2m", SOLVED),
        )),
    "webhook_signature": Story(
        "Webhook signature check fails",
        "Every webhook we receive fails our HMAC verification.",
        "technical", NORMAL, API, ("api", "webhooks"), (
            assign("2h"),
            reply("3h", "The signature is computed over the raw request body. If your "
                        "framework parses and re-serialises the JSON first, the bytes "
                        "change; verify against the raw body."),
            customer("1d", "That was it, verification passes now."),
            move("30m", SOLVED),
        )),
    "incident_report": Story(
        "Request for a written incident report",
        "Our compliance officer needs a report on last week's outage.",
        "technical", NORMAL, EMAIL, ("outage", "rca"), (
            assign("1h", "priya"),
            reply("2h", "Yes, we'll send a written incident report. It's being reviewed "
                        "and will be with you within a week.", by="priya"),
            note("10m", "RCA draft is ready; waiting for legal review before sending.",
                 by="priya"),
            move("2m", ON_HOLD, "waiting for legal review of the incident report",
                 by="priya"),
        )),
    "pricing": Story(
        "Question about the new prices",
        "Does the price change apply to our annual plan right away?",
        "billing", LOW, EMAIL, ("billing", "pricing"), (
            reply("18h", "The new prices apply from your next renewal. Annual plans keep "
                         "their price until the year ends."),
            customer("1d", "So on our annual plan nothing changes until March?"),
            reply("4h", "Exactly: nothing changes until your renewal in March."),
            move("1m", SOLVED),
        )),
    "booking_blank": Story(
        "Online booking page is blank",
        "Our clients see an empty page when they try to book. This is costing us "
        "appointments.",
        "technical", URGENT, PORTAL, ("booking", "outage"), (
            assign("10m"),
            reply("30m", "We're investigating and I'll update you within the hour."),
            note("1h", "Only sites on a custom domain with the old CNAME target are blank."),
            customer("40m", "Any news? Our clients can't book at all."),
            reply("2h20m", "Sorry for the silence. It affects custom domains with an old DNS "
                           "record. Until it's updated, the default link "
                           "tidewater.example/book/your-practice works."),
            customer("3h", "Our IT updated the DNS record."),
            reply("2h", "Confirmed: your booking page loads again on your own domain."),
            move("5m", SOLVED),
        )),
    "pdf_logo": Story(
        "Our logo is missing on invoice PDFs",
        "We uploaded our logo but the PDFs still show the Tidewater one.",
        "technical", LOW, PORTAL, ("export", "branding"), (
            assign("6h"),
            reply("4h", "The logo comes from Settings > Branding. I've uploaded yours again "
                        "in the right format; new PDFs show it."),
            move("2m", SOLVED),
            move("1d", OPEN, "QA found the logo missing on A5 invoices as well"),
            note("5m", "The A5 template ignores the logo slot. ENG-840."),
            reply("1h", "Reopening this: invoices in A5 format still miss the logo. A fix "
                        "is on the way and I'll let you know."),
            reply("2d", "The A5 fix is live; every format shows your logo now."),
            move("2m", SOLVED),
        )),
    "duplicate_logins": Story(
        "Two logins for the same practice",
        "We somehow have two accounts, one for each of our e-mail addresses.",
        "accounts", NORMAL, CHAT, ("accounts",), (
            assign("5m"),
            reply("10m", "I see two accounts, one per address. I can merge them into the "
                         "one you use most; the other's appointments move over. Which one "
                         "should stay?"),
            customer("20m", "Keep the one with frontdesk@."),
            note("5m", "Merged account 88321 into 88107 with the admin tool."),
            reply("15m", "Done: everything is now under frontdesk@ and the other login no "
                         "longer works."),
            move("2m", SOLVED),
        )),
    "payroll_export": Story(
        "Payroll export is missing hours for March",
        "The hours for March 31 are missing from the payroll export. Payroll runs today.",
        "technical", URGENT, PHONE, ("export", "payroll"), (
            assign("5m", "jonas"),
            note("10m", "Hours of March 31 missing: the export cuts at midnight UTC and the "
                        "customer is on UTC+2.", by="jonas"),
            assign("5m", "aiko"),
            note("2m", "Handing over to Aiko, who knows the payroll module.", by="jonas"),
            reply("20m", "We found the cause: the export cut the month at midnight UTC "
                         "instead of your local midnight. Run the March export again and "
                         "it includes the 31st.", by="aiko"),
            customer("30m", "Ran it again, all hours are there. Payroll is saved!"),
            move("5m", SOLVED),
        )),
    "vat_id": Story(
        "Please update our VAT ID on invoices",
        "We have a new VAT ID: PT509876543.",
        "billing", LOW, EMAIL, ("invoices", "tax"), (
            reply("9h", "Done: your new VAT ID is on your company profile and appears on "
                        "every invoice from now on."),
            move("2m", SOLVED),
        )),
    "spam_bookings": Story(
        "Spam bookings from fake clients",
        "Dozens of bookings this week from names like 'asdf qwer', all no-shows.",
        "technical", HIGH, EMAIL, ("security", "booking"), (
            assign("30m"),
            reply("45m", "Thanks for flagging this. I've switched on the booking captcha "
                         "for your page and removed the 43 fake bookings of this week."),
            retag("1m", add=("captcha",)),
            note("2m", "Same bot pattern as last month at two other practices; reported to "
                       "security."),
            customer("1d", "No new fake bookings since. Thanks!"),
            move("10m", SOLVED),
        )),
}

PLACEMENTS = (
    # Six weeks ago and since: closed by now, most of them.
    Placement("login_outage", "hannah", "41d"),
    Placement("invoice_vat", "mara", "40d"),
    Placement("reset_email", "ines", "39d"),
    Placement("export_timeout", "felix", "38d"),
    Placement("client_import", "tereza", "36d"),
    Placement("card_declined", "kenji", "35d"),
    Placement("sms_time", "rosa", "34d"),
    Placement("offboarding", "amara", "33d"),
    Placement("pricing", "olu", "31d", source=CHAT),
    Placement("slow_dashboard", "pieter", "30d"),
    Placement("booking_blank", "samuel", "29d"),
    Placement("twofa_lockout", "wei", "27d"),
    Placement("rate_limit", "jamie", "26d", priority=LOW),
    Placement("calendar_sync", "mara", "24d"),
    Placement("vat_id", "hannah", "23d"),
    Placement("duplicate_logins", "tereza", "22d"),
    Placement("pdf_logo", "felix", "21d"),
    Placement("webhook_signature", "rosa", "19d"),
    Placement("spam_bookings", "ines", "18d"),
    Placement("payroll_export", "olu", "17d"),
    Placement("login_outage", "pieter", "16d", source=CHAT),
    Placement("invoice_vat", "amara", "15d"),
    Placement("reset_email", "kenji", "14d", priority=HIGH),
    Placement("incident_report", "wei", "13d"),
    Placement("double_charge", "samuel", "12d"),
    Placement("client_import", "pieter", "11d"),
    Placement("cancel", "samuel", "10d"),
    Placement("dark_mode", "hannah", "9d", source=EMAIL),
    Placement("duplicate_logins", "jamie", "8d", priority=HIGH),
    Placement("double_charge", "rosa", "7d"),
    Placement("pricing", "ines", "6d"),
    Placement("vat_id", "mara", "5d"),
    Placement("incident_report", "hannah", "5d"),
    # The last days: still moving.
    Placement("cancel", "mara", "3d12h"),
    Placement("webhook_signature", "kenji", "3d"),
    Placement("receipt_language", "amara", "2d6h"),
    Placement("slow_dashboard", "wei", "2d5h"),
    Placement("export_timeout", "pieter", "2d"),
    Placement("pdf_logo", "olu", "2d"),
    Placement("calendar_sync", "ines", "1d6h"),
    Placement("card_declined", "wei", "1d"),
    Placement("twofa_lockout", "ines", "20h"),
    Placement("rate_limit", "rosa", "14h"),
    Placement("spam_bookings", "amara", "10h"),
    Placement("offboarding", "tereza", "6h"),
    Placement("payroll_export", "pieter", "4h"),
    Placement("dark_mode", "jamie", "3h"),
    Placement("sms_time", "samuel", "1h10m"),
    Placement("login_outage", "olu", "50m"),
    Placement("booking_blank", "felix", "35m"),
)

PLAN = Plan(
    colour="#0b6e99",
    name="Tidewater Support",
    agents=AGENTS,
    keys=KEYS,
    organizations=ORGANIZATIONS,
    customers=CUSTOMERS,
    stories=STORIES,
    placements=PLACEMENTS,
)
