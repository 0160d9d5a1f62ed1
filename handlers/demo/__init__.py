"""The demo: two tenants with people, customers and six weeks of tickets, seeded through
the command handlers (``helpdesk demo seed``, and the embedded server's first start).

``plan`` describes a tenant as data, ``tidewater`` (rich) and ``harbor`` (small) are
the two plans, ``seed`` plays them."""
