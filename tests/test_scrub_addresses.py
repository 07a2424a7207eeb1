"""The scrubber reads IP addresses by hand for speed; these tests hold it to the standard library's reading."""

import ipaddress
import random

import pytest

from ichor.scrub import _ipv6_groups, scrub


def _reference_groups(candidate: str) -> list[int] | None:
    try:
        return [int(g, 16) for g in ipaddress.IPv6Address(candidate).exploded.split(":")]
    except ValueError:
        return None


def test_ipv6_groups_agree_with_ipaddress_on_generated_candidates():
    rng = random.Random(6)
    pieces = ["", "0", "1", "db8", "2001", "ffff", "abcd", "12345", "a", "fe80"]
    for _ in range(20000):
        candidate = ":".join(rng.choice(pieces) for _ in range(rng.randint(1, 10)))
        if rng.random() < 0.3:
            candidate = candidate.replace(":", "::", 1)
        assert _ipv6_groups(candidate) == _reference_groups(candidate), candidate


def _ipv4_kept_by_ipaddress(address: str) -> bool:
    ip = ipaddress.IPv4Address(address)
    doc = any(ip in ipaddress.ip_network(n) for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24"))
    first, *_, last = address.split(".")
    return ip.is_loopback or ip.is_unspecified or ip.is_link_local or doc or first == "255" or last == "0"


@pytest.mark.parametrize("seed", range(4))
def test_ipv4_addresses_are_kept_exactly_where_ipaddress_says_they_identify_no_one(seed):
    rng = random.Random(seed)
    firsts = [10, 127, 169, 172, 192, 198, 203, 255, 0, 8, 100]
    for _ in range(500):
        octets = [rng.choice(firsts), rng.randint(0, 255), rng.randint(0, 255), rng.randint(0, 255)]
        if rng.random() < 0.3:
            octets[1:3] = rng.choice([[254, octets[2]], [0, 2], [51, 100], [0, 113]])
        address = ".".join(map(str, octets))
        if len(address) == 7:
            continue  # version-shaped: 1.2.3.4 is kept whatever it is
        kept = scrub(f"host {address} up").text == f"host {address} up"
        assert kept == _ipv4_kept_by_ipaddress(address), address


def test_the_luhn_prefix_filter_agrees_with_stdnum():
    from stdnum import luhn

    from ichor.scrub_pii import _luhn_lengths

    rng = random.Random(7)
    for _ in range(5000):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 22)))
        assert _luhn_lengths(digits) == {n for n in range(1, len(digits) + 1) if luhn.is_valid(digits[:n])}


@pytest.mark.parametrize("after", [" 0", " 12", "-7", " 3 4"])
def test_a_card_followed_by_another_number_is_still_removed(after):
    from stdnum import luhn

    rng = random.Random(after)
    body = "4" + "".join(rng.choice("0123456789") for _ in range(14))
    number = body + luhn.calc_check_digit(body)
    grouped = " ".join(number[i : i + 4] for i in range(0, 16, 4))
    separator = "-" if after.startswith("-") else " "
    text = f"pay with {grouped.replace(' ', separator)}{after}"
    out = scrub(text).text
    assert grouped.replace(" ", separator) not in out and "[CARD]" in out
