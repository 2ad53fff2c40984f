"""The bookkeeping behind fair bot time: owners, round-robin queues, the CPU budget and the
settings that size them."""

from __future__ import annotations

import pytest

from server.fairness import CpuBudget, FairQueue, owner_key
from server.settings import Settings
from tests.support.tables import ManualClock


def test_an_owner_with_many_items_gets_one_turn_like_an_owner_with_one() -> None:
    queue: FairQueue[str] = FairQueue()
    for n in range(5):
        queue.push("farm", f"farm{n}")
    queue.push("honest", "honest0")
    queue.push("farm", "farm5")
    served = []
    while (got := queue.pop()) is not None:
        served.append(got[1])
    assert served == ["farm0", "honest0", "farm1", "farm2", "farm3", "farm4", "farm5"]
    assert len(queue) == 0


def test_a_skipped_owner_keeps_its_place() -> None:
    queue: FairQueue[int] = FairQueue()
    queue.push("a", 1)
    queue.push("b", 2)
    queue.push("a", 3)
    assert queue.pop(lambda key: key == "a") == ("b", 2)
    assert queue.pop(lambda key: key == "a") is None
    assert queue.pop() == ("a", 1)
    assert queue.pop() == ("a", 3)


def test_the_budget_refills_at_its_rate_and_settles_real_costs() -> None:
    clock = ManualClock(0.0)
    budget = CpuBudget(rate=0.5, burst=1.0, clock=clock)
    assert budget.available()
    budget.take(0.3)
    budget.take(0.3)
    budget.take(0.3)
    budget.take(0.3)  # 1.0 - 1.2: spent
    assert not budget.available()
    assert budget.wait_s() == pytest.approx(0.4)
    clock.advance(0.4)
    assert budget.tokens == pytest.approx(0.0)
    budget.settle(0.3, 0.0)  # a forced move cost nothing: its estimate comes back
    assert budget.tokens == pytest.approx(0.3)
    clock.advance(100)
    assert budget.tokens == pytest.approx(1.0)  # never more than the burst


def test_owners_are_addresses_and_ipv6_networks_never_the_address_itself() -> None:
    assert owner_key(None) is None
    four = owner_key("203.0.113.7")
    assert four is not None and "203.0.113.7" not in four
    assert four != owner_key("203.0.113.8")
    assert owner_key("::ffff:203.0.113.7") == four
    assert owner_key("2001:db8:1:2::1") == owner_key("2001:db8:1:2:ffff::9")
    assert owner_key("2001:db8:1:2::1") != owner_key("2001:db8:1:3::1")


def test_bot_settings_are_read_and_bad_ones_refused() -> None:
    settings = Settings.from_env({"ABANDON_AFTER": "90", "BOT_WORKERS": "3",
                                  "BOT_CPU_SHARE": "0.5", "DEADLINES_IN_FLIGHT": "8"})
    assert (settings.abandon_after_s, settings.bot_workers, settings.bot_cpu_share,
            settings.deadlines_in_flight) == (90.0, 3, 0.5, 8)
    defaults = Settings.from_env({})
    assert (defaults.abandon_after_s, defaults.bot_cpu_share, defaults.deadlines_in_flight) == (
        600.0, 0.75, 64)
    assert defaults.bot_workers >= 1
    for name, value in [("ABANDON_AFTER", "0"), ("BOT_CPU_SHARE", "0"),
                        ("BOT_CPU_SHARE", "1.5"), ("BOT_WORKERS", "many")]:
        with pytest.raises(ValueError, match=name):
            Settings.from_env({name: value})
