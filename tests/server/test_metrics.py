"""The move path's metrics (`LoopCounter`, `LoopHistogram`): /metrics shows them as it shows
prometheus_client's own Counter and Histogram after the same changes."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from server.metrics import LoopCounter, LoopHistogram, Metrics


def test_loop_metrics_are_exposed_as_prometheus_client_exposes_its_own() -> None:
    stock, loop = CollectorRegistry(), CollectorRegistry()
    counters = (Counter("x_events", "Events seen", registry=stock),
                LoopCounter("x_events", "Events seen", registry=loop))
    latencies = (Histogram("x_seconds", "Seconds taken", buckets=(0.0005, 0.01, 2.5),
                           registry=stock),
                 LoopHistogram("x_seconds", "Seconds taken", buckets=(0.0005, 0.01, 2.5),
                               registry=loop))
    depths = (Histogram("x_depth", "Frames waiting", buckets=(0, 1, 2, 4, 8), registry=stock),
              LoopHistogram("x_depth", "Frames waiting", buckets=(0, 1, 2, 4, 8), registry=loop))
    for amount in (1, 1, 2.5, 0):
        for counter in counters:
            counter.inc(amount)
    for amount in (0.0004, 0.0005, 0.003, 0.01, 2.5, 2.6, 1e9, 0.0):
        for latency in latencies:
            latency.observe(amount)
    for depth_value in (0, 0, 1, 3, 4, 9, 70):
        for depth in depths:
            depth.observe(depth_value)

    def lines(registry: CollectorRegistry) -> list[str]:
        # a creation time is the clock's when each was made; a histogram's is not shown
        return [line.rsplit(" ", 1)[0] if "_created" in line else line
                for line in generate_latest(registry).decode().splitlines()
                if "x_seconds_created" not in line and "x_depth_created" not in line]

    assert lines(loop) == lines(stock)
    assert 'x_seconds_bucket{le="0.01"} 5.0' in lines(loop)  # 0.0004, 0.0005, 0.003, 0.01, 0
    assert "x_events_total 4.5" in lines(loop)


def test_the_move_path_metrics_are_shown_from_their_first_scrape() -> None:
    metrics = Metrics()
    metrics.ack_seconds.observe(0.0015)
    metrics.moves_accepted.inc()
    rendered = metrics.render().decode()
    assert "dominoes_moves_accepted_total 1.0" in rendered
    assert 'dominoes_ack_seconds_bucket{le="0.001"} 0.0' in rendered
    assert 'dominoes_ack_seconds_bucket{le="0.002"} 1.0' in rendered
    assert 'dominoes_ack_seconds_bucket{le="+Inf"} 1.0' in rendered
    assert "dominoes_ack_seconds_sum 0.0015" in rendered
