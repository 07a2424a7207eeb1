"""The card shows what keep would store: the request, line breaks, scrubbed counts and where to read it all."""

import pytest

from ichor import card
from ichor.scrub import describe
from tests.support import new_pair

PRIYA = "My colleague Priya Raman set up our payroll DB; her password is Tr0ub4dor-payroll. How do I connect?"


@pytest.fixture
def pair(store):
    history = [
        {"role": "user", "content": "we use postgres 16"},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "the db runs in docker"},
        {"role": "assistant", "content": "OK."},
        {"role": "user", "content": PRIYA},
    ]
    new = new_pair(
        1,
        prompt=history,
        rejected="psql -h localhost\n-U payroll\npayroll_db",
        accepted="docker exec -it db \\\n  psql -U payroll payroll_db",
        scrubbed={"email": 1, "github_token": 2},
    )
    return store.add_pair(new)


def test_the_card_shows_the_last_user_message_and_counts_the_earlier_ones(pair):
    text = card.render(pair, "chat")
    assert "prompt (+4 earlier messages):\n  " + PRIYA in text  # the part most likely to hold a name or a secret
    assert "we use postgres 16" not in text


def test_a_prompt_of_one_message_says_no_earlier_messages(store):
    text = card.render(store.add_pair(new_pair(2)), "shell")
    assert "prompt:\n  install the dependencies of project 2" in text and "earlier" not in text


def test_line_breaks_are_kept_in_both_answers(pair):
    text = card.render(pair, "chat")
    assert "rejected:\n  psql -h localhost\n  -U payroll\n  payroll_db\n" in text
    assert "accepted:\n  docker exec -it db \\\n    psql -U payroll payroll_db\n" in text


def test_long_texts_show_fifteen_lines_and_say_how_many_more(store):
    answer = "\n".join(f"line {n}" for n in range(1, 41))
    text = card.render(store.add_pair(new_pair(3, accepted=answer)), "chat")
    block = text.split("accepted:\n", 1)[1].split("\nscrubbed:", 1)[0].splitlines()
    assert block == [f"  line {n}" for n in range(1, 16)] + ["  … 25 more lines"]


def test_a_very_long_line_is_cut_and_marked(store):
    text = card.render(store.add_pair(new_pair(4, rejected="x" * 5000)), "chat")
    [line] = [ln for ln in text.splitlines() if ln.startswith("  xxx")]
    assert len(line) == len(card.INDENT) + card.MAX_LINE_CHARS and line.endswith("…")


def test_the_scrubbed_kinds_and_counts_stay(pair):
    assert "scrubbed: " in card.render(pair, "chat")
    line = [ln for ln in card.render(pair, "chat").splitlines() if ln.startswith("scrubbed:")][0]
    assert line == f"scrubbed: {describe(pair.scrubbed)}" and "1 email" in line


@pytest.mark.parametrize(
    "surface, show, keep",
    [("chat", "/ichor show 1", "/ichor keep 1"), ("shell", "ichor show 1", "ichor keep 1")],
)
def test_the_wording_is_right_for_where_the_card_is_read(pair, surface, show, keep):
    text = card.render(pair, surface)
    assert f"whole pair, as it would be stored: {show}" in text
    assert text.splitlines()[-1].startswith(keep)
    if surface == "shell":
        assert "/ichor" not in text


def test_a_dm_card_keeps_the_one_letter_choices(pair):
    assert card.render_card(pair).splitlines()[-1] == card.CHOICES
    assert "/ichor show 1" in card.render_card(pair)


def test_an_unknown_surface_is_refused(pair):
    with pytest.raises(ValueError, match="unknown surface"):
        card.render(pair, "fax")


def test_everything_a_short_pair_stores_is_on_its_card(store):
    p = store.add_pair(new_pair(5, user_said="no, pnpm\nand frozen lockfile"))
    text = card.render(p, "shell")
    for stored in (p.prompt[-1]["content"], *p.user_said.splitlines(), p.rejected, p.accepted, p.label):
        assert stored in text


def test_a_card_of_huge_texts_fits_one_chat_message_and_says_what_it_left_out(store):
    wide = "\n".join("y" * 199 for _ in range(40))
    p = store.add_pair(
        new_pair(6, prompt=[{"role": "user", "content": wide}], user_said=wide, rejected=wide, accepted=wide)
    )
    text = card.render(p, "chat")
    assert len(text) < 4096
    assert text.count("more lines") == 4  # every block says it was cut
    assert f"/ichor show {p.id}" in text
