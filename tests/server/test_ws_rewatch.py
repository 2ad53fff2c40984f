"""A table whose last local socket has just gone, watched again at once, keeps receiving its
versions: dropping the table's subscriptions and subscribing them again never cross, so no
later notice is lost to an unsubscribe that lands after the new subscribe."""

from __future__ import annotations

import httpx

from tests.support.servers import GameClient, ServiceProcess, create_table, join


async def test_a_table_watched_again_right_after_its_last_socket_left_gets_every_version(
    service: ServiceProcess, http: httpx.AsyncClient
) -> None:
    table = await create_table(http, players=3)
    missed = []
    for attempt in range(60):
        gone = await GameClient.connect(service.ws_url)
        await gone.hello(table)
        await gone.close()  # the process drops the table ...
        watcher = await GameClient.connect(service.ws_url)  # ... and watches it again at once
        await watcher.hello(table)
        held = watcher.v
        assert held is not None
        token = await join(http, table, 0, f"p{attempt}")  # a new version
        try:
            await watcher.wait_version(held + 1, 3)
        except TimeoutError:
            missed.append(attempt)
        response = await http.post(f"/api/tables/{table}/leave", json={"token": token})
        assert response.status_code == 200
        await watcher.close()
    assert not missed, f"versions never delivered after re-watching, attempts {missed}"
