"""The dominoes service: Redis-backed tables, websocket and HTTP glue around `engine`."""
