"""The ``helpdesk`` command line: ``main`` parses, each command lives in its module."""
