"""The tests' port picker: ports no outgoing connection can take before a server binds them."""

from __future__ import annotations

import socket

import pytest

from tests.conftest import PORTS, free_port


def test_ports_are_distinct_bindable_and_outside_the_ephemeral_range() -> None:
    ports = [free_port() for _ in range(50)]
    assert len(set(ports)) == len(ports)
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        ephemeral_low = int(f.read().split()[0])
    assert all(port < ephemeral_low for port in ports)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", ports[-1]))  # nothing took it


def test_a_port_in_use_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", free_port()))
        held.listen()
        taken, spare = held.getsockname()[1], free_port()
        monkeypatch.setitem(PORTS, "next", iter([taken, spare]))
        assert free_port() == spare
