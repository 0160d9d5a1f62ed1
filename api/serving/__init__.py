"""How ``helpdesk serve`` runs the app under uvicorn: deadlines and a connection cap.

uvicorn has no deadline for reading a request; the protocol class here adds it, and
``server_options`` hands it to uvicorn with the process settings.
"""
