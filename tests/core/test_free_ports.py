"""The test kit's free ports: a server of several listeners (SeaweedFS has nine) gets
different ports, each free. Ports taken one after another can repeat: the system hands
out a port it has just freed again, and a server then fails to bind its second listener."""

from __future__ import annotations

import socket

from tablelog.testing import free_ports


def test_ports_chosen_together_are_all_different() -> None:
    for _ in range(50):
        ports = free_ports(9)
        assert len(set(ports)) == 9


def test_each_port_chosen_can_be_listened_on() -> None:
    for port in free_ports(3):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", port))
            sock.listen()
