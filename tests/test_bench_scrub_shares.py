"""The paste bench's shares, including the two that set aside what ichor treats differently by design."""

from bench.bench_scrub import _heldout_tool, _is_ip
from bench.corpus_blind5 import Paste


def test_names_and_bare_ips_are_set_aside_in_their_own_shares_only():
    paste = Paste(
        shape="t",
        text="Ana Souza: password=Hunter2-x at 10.1.2.3, build 1.2.3",
        must_go=[("person_name", "Ana Souza"), ("password", "Hunter2-x")],
        must_stay=["10.1.2.3", "build 1.2.3"],
    )
    shares = _heldout_tool([paste], lambda t: t.replace("Hunter2-x", "[PW]").replace("10.1.2.3", "[IP]"))

    def share(name):
        return shares[name]["share"], shares[name]["n"]

    assert share("removed") == (0.5, 2) and share("removed_without_person_names") == (1.0, 1)
    assert share("kept") == (0.5, 2) and share("kept_without_ip_addresses") == (1.0, 1)


def test_only_a_whole_address_is_an_ip():
    assert _is_ip("10.244.1.17") and _is_ip(" fe80::1 ")
    assert not _is_ip("1.2.3") and not _is_ip("IP: 10.0.0.1") and not _is_ip("v1.2.3.4")
