"""Network: a TCP listener, a unix-socket listener (world-connectable path) and an
abstract unix socket, all opened by this test process on the host's loopback. Workers live
in an empty network namespace, Landlock denies TCP connect/bind and abstract sockets, and
the seccomp filter makes ``socket()`` fail with EPERM; the listeners must see nothing."""

from __future__ import annotations

import pytest
from attack_fixtures import *  # noqa: F403 (the suite's fixtures: decoys, pools, parent checks)
from containment import assert_contained
from hostile import POLICY, Attack, static

ATTACKS = [
    Attack("tcp-connect-loopback-listener",
           'import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\ns.connect(("127.0.0.1", {TCP_PORT}))\ns.sendall(b"hello")',
           static("import"), POLICY, "static; seccomp socket=EPERM; empty net namespace; landlock tcp"),
    Attack("udp-sendto-loopback",
           'import socket\nsocket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", {TCP_PORT}))',
           static("import"), POLICY, "static; seccomp socket=EPERM; empty net namespace"),
    Attack("tcp-bind-listen",
           'import socket\ns = socket.socket()\ns.bind(("0.0.0.0", 0))\ns.listen(1)',
           static("import"), POLICY, "static; seccomp socket=EPERM; landlock tcp bind"),
    Attack("unix-socket-path-listener",
           'import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect("{UNIX_PATH}")\ns.sendall(b"hello")',
           static("import"), POLICY, "static; seccomp socket=EPERM"),
    Attack("abstract-unix-socket",
           'import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect("\\0{ABSTRACT_NAME}")\ns.sendall(b"hello")',
           static("import"), POLICY, "static; seccomp socket=EPERM; net namespace; landlock abstract scope"),
    Attack("socketpair-then-raw-fd-scan",
           "import socket\na, b = socket.socketpair()",
           static("import"), POLICY, "static; seccomp socketpair=EPERM"),
]


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.id)
def test_normal_path_contains(guarded_pool, decoys, attack):
    assert_contained(guarded_pool, attack, attack.guarded, decoys)


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.id)
def test_os_layers_alone_contain(os_pool, decoys, attack):
    assert_contained(os_pool, attack, attack.os_only, decoys)
