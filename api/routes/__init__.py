"""The HTTP routes, one module per resource. A route parses the request, calls one
handler (or read), and shapes the reply; no route module imports another."""
