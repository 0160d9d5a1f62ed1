"""The live event feed over WebSocket (``/v1/stream``): hub, connections, protocol."""
