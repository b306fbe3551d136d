"""Network guard for the test suite (loaded by every Python the tests start).

pytest puts this folder on PYTHONPATH and sets COURSE_NETGUARD_LOG, so each
kernel nbval or nbclient launches imports it at start-up. Connections to
anything but loopback (or a Unix socket) are refused with an OSError and
written to the log; the test run then fails on that test (see conftest.py).
"""
import ipaddress
import os
import socket

_LOG = os.environ.get("COURSE_NETGUARD_LOG")


def _is_local(host) -> bool:
    if host in (None, "", "localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False            # a host name other than localhost


def _is_name(host) -> bool:
    """True for a host name that needs DNS (not an IP literal, not localhost)."""
    try:
        ipaddress.ip_address(str(host).split("%")[0])
        return False
    except ValueError:
        return not _is_local(host)


def _refuse(what: str):
    if _LOG:
        with open(_LOG, "a", encoding="utf-8") as f:
            f.write(f"pid {os.getpid()}: {what}\n")
    raise OSError(f"network access blocked by the course's test guard: {what}")


if _LOG:
    _connect, _connect_ex = socket.socket.connect, socket.socket.connect_ex
    _getaddrinfo = socket.getaddrinfo

    def _check(sock, address):
        if sock.family in (socket.AF_INET, socket.AF_INET6) and not _is_local(address[0]):
            _refuse(f"connect to {address[0]}:{address[1]}")

    def connect(self, address):
        _check(self, address)
        return _connect(self, address)

    def connect_ex(self, address):
        _check(self, address)
        return _connect_ex(self, address)

    def getaddrinfo(host, *args, **kwargs):
        if _is_name(host.decode() if isinstance(host, bytes) else host):
            _refuse(f"DNS lookup of {host}")
        return _getaddrinfo(host, *args, **kwargs)

    socket.socket.connect = connect
    socket.socket.connect_ex = connect_ex
    socket.getaddrinfo = getaddrinfo
