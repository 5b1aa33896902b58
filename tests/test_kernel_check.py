"""The kernel check: how it reads scores (recorded numbers), and a real run of the default setup against float32."""

from __future__ import annotations

import pytest

from backend.bench import kernel_check
from backend.engine.vllm_command import effective_dtype, read_host_choice
from backend.server.processes import free_ports
from tests.conftest import make_settings


def _result(scores: list[float], continuations: list[list[int]], answers: list[str]) -> dict:
    return {"dtype": "bfloat16", "scores": scores, "continuations": continuations, "answers": answers}


def test_a_setup_whose_continuations_float32_finds_unlikely_is_named_with_its_lengths() -> None:
    """Scores as a garbling kernel gives them (whole nats below float32's own at two lengths) are
    reported at those lengths only; bf16 drift of a few hundredths is not."""
    lengths = [30, 31, 32, 33]
    ref = _result([-0.50, -0.40, -0.60, -0.55], [[1], [2], [3], [4]], ["The capital is Paris.", "Yes."])
    drift = _result([-0.53, -0.42, -0.61, -0.57], [[1], [2], [9], [4]], ["The capital is Paris.", "No."])
    salad = _result([-0.52, -4.90, -0.60, -6.20], [[1], [7], [3], [8]], ["La la la.", "Yes."])
    rows = {
        r["variant"]: r
        for r in kernel_check.compare(
            ["float32", "drift", "salad"], {"float32": ref, "drift": drift, "salad": salad}, lengths
        )
    }
    assert rows["float32"]["off_lengths"] == [] and rows["float32"]["worst_gap"] == 0
    assert rows["drift"]["off_lengths"] == [] and rows["drift"]["first_token_alike"] == 3
    assert rows["drift"]["first_words_alike"] == 1
    assert rows["salad"]["off_lengths"] == [31, 33] and rows["salad"]["worst_gap"] == 5.65
    table = kernel_check.table(list(rows.values()))
    assert "| salad | bfloat16 |" in table and "2 of 4: 31, 33" in table and "0 of 4: none" in table


@pytest.mark.server
def test_the_default_setup_continues_right_at_every_length_around_the_reported_fault(tmp_path) -> None:
    """The real path on this machine: the host-chosen default (on an AMX host, bf16 with oneDNN's AMX
    kernels) continues a real text cut at 30-40 tokens, one request at a time, and float32 finds every
    continuation about as likely as its own (a kernel fault reported over 32 tokens would be whole nats off)."""
    settings = make_settings(tmp_path)
    if effective_dtype(settings, "cpu", read_host_choice(settings)) == "float32":
        pytest.skip("this host's default is float32, the reference itself (the reported fault is in bf16 kernels)")
    *vllm_ports, ui_port = free_ports(3)
    lengths = list(range(30, 41))
    results = kernel_check.run(["today", "defaults"], lengths, vllm_ports, ui_port)
    rows = {
        r["variant"]: r for r in kernel_check.compare(["today", "defaults"], results["variants"], results["lengths"])
    }
    assert results["lengths"] == lengths
    assert rows["defaults"]["off_lengths"] == [], kernel_check.table(list(rows.values()))
    assert rows["defaults"]["first_words_alike"] >= 30  # of the 39 questions: bf16 drifts, it does not garble
