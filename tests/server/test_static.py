"""The static client files: gzip for a client that accepts it, and revalidated caching."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from tests.server.conftest import FAST, running
from tests.support.servers import ServiceProcess

BUNDLE = "export const answer = 42;\n" * 400  # 10 KB of script that compresses well


@pytest.fixture
async def site(redis_url: str, tmp_path: Path) -> AsyncIterator[str]:
    (tmp_path / "index.html").write_text("<!doctype html><title>t</title>")
    (tmp_path / "app.js").write_text(BUNDLE)
    env = {**FAST, "STATIC_DIR": str(tmp_path)}
    async with running(ServiceProcess(redis_url, env=env)) as svc:
        yield svc.url


async def test_the_bundle_is_sent_compressed_to_a_client_that_accepts_gzip(site: str) -> None:
    async with httpx.AsyncClient(base_url=site) as http:
        raw = await http.get("/app.js", headers={"Accept-Encoding": "gzip"})
        plain = await http.get("/app.js", headers={"Accept-Encoding": "identity"})
    assert raw.headers["content-encoding"] == "gzip"
    assert int(raw.headers["content-length"]) < len(BUNDLE) // 10
    assert raw.text == BUNDLE  # httpx decompresses: the same file
    assert "content-encoding" not in plain.headers and plain.text == BUNDLE
    assert "Accept-Encoding" in raw.headers["vary"]


async def test_static_files_are_revalidated_from_the_cache(site: str) -> None:
    async with httpx.AsyncClient(base_url=site) as http:
        first = await http.get("/app.js")
        again = await http.get("/app.js", headers={"If-None-Match": first.headers["etag"]})
        page = await http.get("/")
    assert first.headers["cache-control"] == "no-cache"
    assert again.status_code == 304 and again.content == b""
    assert page.headers["cache-control"] == "no-cache"
