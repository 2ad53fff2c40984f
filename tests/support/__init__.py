"""Test support shared by the server, websocket and browser tests (real processes, no fakes)."""
