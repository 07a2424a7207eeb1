"""Checks derived from a user's correction, and how answers are scored against them."""

import pytest

from ichor.correction_checks import Check, checks_from, satisfaction


def wanted(checks):
    return {c.term for c in checks if c.present}


def banned(checks):
    return {c.term for c in checks if not c.present}


# ------------------------------------------------------------------------------------- named things


@pytest.mark.parametrize(
    ("said", "term"),
    [
        ("sed needs -E for that", "-E"),
        ("you forgot --all", "--all"),
        ("mkdir needs -p here", "-p"),
    ],
)
def test_a_flag_the_correction_names_must_appear(said, term):
    checks = checks_from(said)
    assert term in wanted(checks)
    assert Check(term, True, "named").holds(f"run it with {term}")
    # flags are case-sensitive: -e is not -E
    assert not Check("-E", True, "named").holds("sed -e 's/a/b/'")


@pytest.mark.parametrize(
    ("said", "term"),
    [
        ("the config lives under ~/.config", "~/.config"),
        ("put it in .github/workflows", ".github/workflows"),
        ("move craft into game_craft.rb", "game_craft.rb"),
    ],
)
def test_a_file_or_path_the_correction_names_must_appear(said, term):
    assert term in wanted(checks_from(said))


@pytest.mark.parametrize(
    ("said", "term", "right", "wrong"),
    [
        ("we're still on Python 3.8", "3.8", "On Python 3.8 use {**a, **b}.", "Use a | b (Python 3.9+)."),
        ("our CI uses Java 11", "11", "In Java 11 write var names = List.of();", "Use a record (Java 16)."),
        ("Node 18 is what we run", "18", "Node 18 ships fetch.", "Node 180 is fine."),
    ],
)
def test_a_version_must_appear_exactly(said, term, right, wrong):
    checks = checks_from(said)
    assert term in wanted(checks)
    assert satisfaction(right, checks) == 1.0
    assert satisfaction(wrong, checks) == 0.0


@pytest.mark.parametrize(
    ("said", "term"),
    [
        ("call read_text, not read", "read_text"),
        ("the helper is parseConfig", "parseConfig"),
        ("use `git switch`", "git switch"),
        ('rename it to "Consumed"', "Consumed"),
    ],
)
def test_identifiers_and_quoted_words_must_appear(said, term):
    assert term in wanted(checks_from(said))


@pytest.mark.parametrize(
    ("said", "term"),
    [("we use pnpm", "pnpm"), ("no, this repo uses yarn", "yarn"), ("switch to poetry please", "poetry")],
)
def test_the_word_after_use_or_switch_to_must_appear(said, term):
    assert term in wanted(checks_from(said))


# ----------------------------------------------------------------------------------------- negations


@pytest.mark.parametrize(
    ("said", "good", "bad"),
    [
        ("we use pnpm, not npm", "pnpm", "npm"),
        ("Postgres uses LIMIT, not TOP", "LIMIT", "TOP"),
        ("use switch instead of checkout", "switch", "checkout"),
        ("don't use sudo, use pipx", "pipx", "sudo"),
    ],
)
def test_a_negated_term_must_not_be_used(said, good, bad):
    checks = checks_from(said)
    assert good in wanted(checks)
    assert bad in banned(checks)


@pytest.mark.parametrize(
    ("said", "rejected", "bad"),
    [
        ("apt-key is deprecated", "Run `curl -fsSL URL | sudo apt-key add -`.", "apt-key"),
        ("netstat isn't there anymore", "Run `netstat -tulpn | grep 8080`.", "netstat"),
        ("you can't filter an aggregate in WHERE", "`SELECT a FROM t WHERE COUNT(*) > 5 GROUP BY a;`", "WHERE"),
    ],
)
def test_a_negative_statement_bans_what_the_rejected_answer_ran(said, rejected, bad):
    assert bad in banned(checks_from(said, rejected))


def test_a_negative_statement_bans_nothing_the_rejected_answer_did_not_run():
    assert checks_from("that method doesn't exist", "Call `Path('x').read()`.") == []


def test_that_is_x_not_y_bans_x_unless_the_rejected_answer_ran_y():
    assert (wanted(checks_from("that's bash, not zsh")), banned(checks_from("that's bash, not zsh"))) == (
        {"zsh"},
        {"bash"},
    )
    # the rejected answer ran pip, so "that's poetry, not pip" means the project is poetry
    checks = checks_from("that's poetry, not pip", "Run `pip install pytest`. Poetry sees it.")
    assert (wanted(checks), banned(checks)) == ({"poetry"}, {"pip"})


def test_a_negated_mention_in_the_answer_is_not_a_use():
    npm = Check("npm", False, "negated")
    assert npm.holds("Use pnpm, not npm: pnpm install.")
    assert npm.holds("Run pnpm install instead of npm install.")
    assert not npm.holds("Run npm install.")


def test_in_an_answer_with_code_only_code_that_runs_the_term_uses_it():
    apt_key = Check("apt-key", False, "negated")
    assert apt_key.holds("`apt-key` is deprecated; run `curl URL | sudo gpg --dearmor -o key.gpg`.")
    assert not apt_key.holds("Run `curl URL | sudo apt-key add -`.")


# -------------------------------------------------------------------------- the rejected answer's tokens


def test_correction_words_the_rejected_answer_ran_and_the_accepted_dropped_are_banned():
    rejected = "Run `git checkout -b feature`."
    accepted = "Run `git switch -c feature`."
    checks = checks_from("git checkout is overloaded, use switch", rejected, accepted)
    assert banned(checks) == {"checkout"}
    assert wanted(checks) == {"switch"}
    assert satisfaction(accepted, checks) == 1.0
    assert satisfaction(rejected, checks) == 0.0


def test_the_accepted_answer_drops_checks_it_fails():
    # "HTTP 401 isn't forbidden": the accepted answer itself says 403 Forbidden, so `forbidden` is no ban
    accepted = "401 Unauthorized means no credentials; 403 Forbidden means access is refused."
    checks = checks_from("HTTP 401 isn't forbidden", "401 means `Forbidden`.", accepted)
    assert all(c.holds(accepted) for c in checks)
    assert "forbidden" not in {t.lower() for t in banned(checks)}


# ------------------------------------------------------------------------------------------ satisfaction


def test_satisfaction_is_none_without_checks_and_a_share_with_them():
    assert checks_from("still failing with the same error") == []
    assert satisfaction("anything", []) is None
    checks = checks_from("we use pnpm, not npm")
    assert satisfaction("Run `pnpm install`.", checks) == 1.0
    assert satisfaction("Run `npm install`.", checks) == 0.0
    assert satisfaction("Run `pnpm install` then `npm test`.", checks) == 0.5


def test_non_english_corrections_still_yield_named_files():
    assert "game_craft.rb" in wanted(checks_from("请移动到game_craft.rb中。"))
