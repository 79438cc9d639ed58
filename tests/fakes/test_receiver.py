"""The customer's endpoint fake records whole requests only, as an application behind a web server would see them."""

from __future__ import annotations

import socket
import ssl

import requests
import trustme

from tests.fakes.receiver import Receiver


def test_a_request_cut_short_is_not_an_arrival(receiver: Receiver, ca: trustme.CA, ca_bundle: str) -> None:
    context = ssl.create_default_context()
    ca.configure_trust(context)
    head = "POST /hook HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n"
    with (
        socket.create_connection(("127.0.0.1", receiver.port)) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as connection,
    ):
        connection.sendall(head.encode() + b'{"n": 1')  # the sender dies here

    answer = requests.post(receiver.url(), json={"n": 2}, verify=ca_bundle, timeout=5)

    assert answer.status_code == 200
    assert [arrival.body for arrival in receiver.wait_for(1)] == [b'{"n": 2}']
