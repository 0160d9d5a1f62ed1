"""A Python client for the helpdesk API, for programs that use it: the live feed
(``stream.StreamClient``) and a mirror of the desk kept from ``GET /v1/changes``
(``mirror.Mirror``).

Shipped with the package (``docs/websocket.md`` documents it for API clients) and
independent of the server: it imports nothing of ``api`` or the layers below.
"""
