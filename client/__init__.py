"""A Python client for the helpdesk API's live feed, for programs that use the API.

Shipped with the package (``docs/websocket.md`` documents it for API clients) and
independent of the server: it imports nothing of ``api`` or the layers below.
"""
