"""The benchmark's arithmetic, on recorded timings (never on how fast anything is)."""

from __future__ import annotations

import json

import pytest

from backend.bench.__main__ import parse_args
from backend.bench.report import table, ui_overhead
from backend.bench.stats import StreamRecord, percentile, summarize


def test_percentile_interpolates_like_numpy() -> None:
    values = [10.0, 20.0, 30.0, 40.0]
    assert percentile(values, 50) == 25.0
    assert percentile(values, 95) == pytest.approx(38.5)
    assert percentile(values, 0) == 10.0 and percentile(values, 100) == 40.0
    assert percentile([], 50) is None


def test_stream_ttft_gaps_and_rate() -> None:
    r = StreamRecord(sent_at=100.0, arrivals=[100.5, 100.6, 100.8, 101.5], tokens=4)
    assert r.ttft == pytest.approx(0.5)
    assert r.gaps == pytest.approx([0.1, 0.2, 0.7])
    assert r.tokens_per_second == pytest.approx(3 / 1.0)


def test_summary_of_a_run_with_one_failed_stream() -> None:
    records = [
        StreamRecord(sent_at=0, arrivals=[0.1, 0.2, 0.3], tokens=3),
        StreamRecord(sent_at=0, arrivals=[0.3, 0.5, 0.7], tokens=3),
        StreamRecord(sent_at=0, error="ReadTimeout"),
    ]
    s = summarize(records, wall_seconds=2.0)
    assert (s["streams"], s["errors"], s["output_tokens"]) == (3, 1, 6)
    assert s["ttft_p50_ms"] == pytest.approx(200.0)
    assert s["itl_p50_ms"] == pytest.approx(150.0)
    assert s["tok_s_total"] == pytest.approx(3.0)
    assert s["tok_s_per_stream"] == pytest.approx((10.0 + 5.0) / 2)


def test_ui_overhead_ratio_and_added_first_token_delay() -> None:
    direct = {"tok_s_total": 200.0, "ttft_p50_ms": 100.0}
    ui = {"tok_s_total": 190.0, "ttft_p50_ms": 112.0}
    out = ui_overhead({"direct": {4: direct}, "ui": {4: ui}})
    assert out[4]["ratio"] == pytest.approx(0.95) and out[4]["added_ttft_ms"] == pytest.approx(12.0)


def test_table_has_a_row_per_mode_and_level() -> None:
    s = summarize([StreamRecord(sent_at=0, arrivals=[0.1, 0.2], tokens=2)], wall_seconds=1)
    text = table({"direct": {1: s, 16: s}, "ui": {1: s}, "baseline": {1: s}})
    assert "| direct | 1 |" in text and "| direct | 16 |" in text and "| baseline | 1 |" in text
    assert "UI / direct throughput" in text and "1.0x" in text
    json.dumps(s)  # results must be JSON-serialisable


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--concurrency", "1,x"], "concurrency"),
        (["--concurrency", "0"], "concurrency"),
        (["--max-tokens", "0"], "max-tokens"),
        (["--streams-per-process", "0"], "streams-per-process"),
    ],
)
def test_bad_arguments_get_a_clear_message(argv, named: str, capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        parse_args(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "error:" in err and named in err
