"""Where ``chaos serve`` listens unless told: apart from chaos.report.serve so that building the
command line (every ``chaos`` command does) need not import the HTTP server."""

from __future__ import annotations

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
