"""Where a webhook may go: an http(s) URL whose host is not this machine (loopback, unspecified) nor
link-local (a cloud's metadata service). Checked when an admin sets the URL and again before each
send, since a name can resolve elsewhere later (docs/SECURITY.md). `WEBHOOK_ALLOW_LOOPBACK` lifts
the loopback rule for a receiver on the same host (the tests' own).
"""
from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from server.errors import InvalidInput


def _inside(address: str, allow_loopback: bool) -> bool:
    ip = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return ip.is_link_local or ip.is_unspecified or (ip.is_loopback and not allow_loopback)


def refusal(url: str, allow_loopback: bool, resolve: bool) -> str | None:
    """Why `url` may not be a webhook target, or None. With `resolve`, a host name is looked up;
    a name that does not resolve is left to the send, which will fail on it."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"webhook_url must be an http(s) URL, got {url!r}"
    host = parts.hostname
    if host == "localhost" or host.endswith(".localhost"):
        return None if allow_loopback else f"webhook_url {url!r} points at this machine (loopback)"
    try:
        addresses = [host] if _is_ip(host) else ([a[4][0] for a in socket.getaddrinfo(host, None)] if resolve else [])
    except OSError:
        return None
    bad = [a for a in addresses if _inside(str(a), allow_loopback)]
    return (f"webhook_url {url!r} points at {bad[0]}: loopback, unspecified and link-local addresses are refused"
            if bad else None)


def check(url: str, allow_loopback: bool) -> None:
    reason = refusal(url, allow_loopback, resolve=True)
    if reason:
        raise InvalidInput(reason)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return False
    return True
