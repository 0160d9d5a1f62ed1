"""How ``helpdesk serve`` runs the app under uvicorn: deadlines, a connection cap, and
a WebSocket protocol that can shed a client that stopped reading.

uvicorn has no deadline for reading a request, and its WebSocket sends wait for as long
as a client leaves its socket full; the protocol classes here add what it lacks, and
``server_options`` hands them to uvicorn with the process settings.
"""
