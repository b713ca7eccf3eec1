"""A TCP server for the rig's tests: answers each connection with what it first receives.

    python echo_server.py PORT
"""

from __future__ import annotations

import socket
import sys

with socket.create_server(("0.0.0.0", int(sys.argv[1])), reuse_port=True) as server:
    while True:
        client, _ = server.accept()
        with client:
            client.sendall(client.recv(1 << 16))
