"""Settings from the environment: defaults, parsing and refusal of nonsense."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.settings import Settings


def test_defaults_run_out_of_the_box() -> None:
    settings = Settings.from_env({})
    assert (settings.host, settings.port, settings.redis_url) == ("127.0.0.1", 8000, None)
    assert (settings.max_frame, settings.send_queue) == (4096, 64)
    assert (settings.rate, settings.rate_burst) == (10.0, 20)
    assert settings.allowed_origins == ()
    assert settings.data_dir == Path("./data")


def test_values_are_read_from_the_environment() -> None:
    settings = Settings.from_env({
        "PORT": "9001", "REDIS_URL": "redis://r:6379/0", "RATE": "5/7", "SEND_QUEUE": "8",
        "ALLOWED_ORIGINS": "https://a.example, https://b.example", "LOG_LEVEL": "debug",
        "STATIC_DIR": "/srv/client", "RECONNECT_WINDOW_S": "2.5", "WS_DEFLATE": "yes",
        "STATE_APPEND_MAX": "0",
    })
    assert settings.port == 9001 and settings.redis_url == "redis://r:6379/0"
    assert (settings.rate, settings.rate_burst, settings.send_queue) == (5.0, 7, 8)
    assert settings.allowed_origins == ("https://a.example", "https://b.example")
    assert settings.log_level == "DEBUG" and settings.static_dir == Path("/srv/client")
    assert settings.reconnect_window_s == 2.5 and settings.ws_deflate is True
    assert settings.state_append_max == 0 and Settings.from_env({}).state_append_max == 64


def test_login_limits_and_the_session_cap() -> None:
    defaults = Settings.from_env({})
    assert (defaults.logins_per_account, defaults.logins_per_address,
            defaults.max_sessions_per_account) == (10, 100, 20)
    settings = Settings.from_env({"LOGINS_PER_ACCOUNT": "4", "LOGINS_PER_ADDRESS": "7",
                                  "MAX_SESSIONS_PER_ACCOUNT": "3"})
    assert (settings.logins_per_account, settings.logins_per_address,
            settings.max_sessions_per_account) == (4, 7, 3)


@pytest.mark.parametrize("name, value", [
    ("PORT", "eighty"), ("SEND_QUEUE", "-1"), ("LOGINS_PER_ACCOUNT", "ten"),
    ("LOGINS_PER_ADDRESS", "-5"), ("MAX_SESSIONS_PER_ACCOUNT", "2.5"),
])
def test_nonsense_is_refused_with_the_variable_named(name: str, value: str) -> None:
    with pytest.raises(ValueError, match=name):
        Settings.from_env({name: value})
