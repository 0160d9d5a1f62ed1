"""The small demo tenant: Harbor Bikes, a bicycle shop with a two-person desk.

It is there to show isolation: its keys see its five tickets and nothing of the
other tenant, and the other tenant's keys see nothing of these.
"""

from __future__ import annotations

from domain.values import Priority, Role, Source, TicketState
from handlers.demo.plan import (
    Agent,
    Customer,
    MachineKey,
    Placement,
    Plan,
    Story,
    assign,
    customer,
    move,
    note,
    reply,
)

AGENTS = (
    Agent("nils", "Nils Berg", "nils@harbor-bikes.example", Role.ADMIN, ("workshop",)),
    Agent("eva", "Eva Lund", "eva@harbor-bikes.example", Role.AGENT, ("workshop",)),
)

CUSTOMERS = {
    "ole": Customer("Ole Hansen", "ole.hansen@mailbox.example"),
    "lea": Customer("Lea Sand", "lea.sand@mailbox.example"),
    "tim": Customer("Tim Roth", "tim.roth@mailbox.example"),
}

STORIES = {
    "shifter": Story(
        "Gears slip after the service",
        "Since the service last week the chain jumps on the two smallest sprockets.",
        "workshop", Priority.NORMAL, Source.EMAIL, ("repair",), (
            assign("1h"),
            reply("2h", "Sorry about that: the cable probably stretched after the new "
                        "install, which is normal. Drop by any morning and we adjust it "
                        "for free."),
            customer("1d", "Came by this morning, it shifts perfectly now."),
            move("10m", TicketState.SOLVED),
        )),
    "order": Story(
        "Where is my order #1042?",
        "I ordered a rear light ten days ago and have heard nothing since.",
        "workshop", Priority.HIGH, Source.PORTAL, ("orders",), (
            assign("30m"),
            note("5m", "Supplier is out of stock until Friday."),
            reply("10m", "Your light is on back order until Friday; we'll ship it that "
                         "day. Sorry for the wait."),
            move("1m", TicketState.PENDING, "waiting for the supplier"),
        )),
    "warranty": Story(
        "Warranty claim: cracked frame",
        "Found a crack near the bottom bracket of my two-year-old frame.",
        "workshop", Priority.URGENT, Source.PHONE, ("warranty",), (
            assign("5m"),
            reply("3h", "Please bring the bike in; we'll photograph the crack and file "
                        "the claim with the maker."),
            move("5m", TicketState.ON_HOLD, "waiting for the manufacturer's answer"),
        )),
    "booking": Story(
        "Can I book a repair online?",
        "Is there a way to book a repair slot without calling?",
        "workshop", Priority.LOW, Source.CHAT, ("question",), (
            reply("2h", "Not yet, but calling or dropping by works any day from 9 to 6."),
            move("1m", TicketState.SOLVED),
        )),
    "helmet": Story(
        "Wrong helmet size delivered",
        "I ordered an M and got an L.",
        "workshop", Priority.NORMAL, Source.API, ("orders", "returns"), ()),
}

PLACEMENTS = (
    Placement("shifter", "ole", "9d"),
    Placement("booking", "lea", "6d"),
    Placement("warranty", "tim", "3d"),
    Placement("order", "lea", "1d"),
    Placement("helmet", "ole", "2h"),
)

PLAN = Plan(
    colour="#b3471d",
    name="Harbor Bikes",
    agents=AGENTS,
    keys=(MachineKey(Role.INTAKE, "Web shop intake"),),
    organizations=(),
    customers=CUSTOMERS,
    stories=STORIES,
    placements=PLACEMENTS,
)
