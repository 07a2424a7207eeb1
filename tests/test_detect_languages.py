"""Stage 1 reads messages in any script, and its word classes in 17 other languages, for non-English text only."""

import json
import re
from importlib import resources

import pytest

from ichor.detect_features import features
from ichor.detect_rules import content_words
from ichor.detect_text import HAN_KANA, Window, tokens, with_compounds
from ichor.language import language_group

LEXICON = json.loads(resources.files("ichor").joinpath("data/lexicon_i18n.json").read_text(encoding="utf-8"))
ANSWER = "I updated `config.py` so the port is read from the environment."


def shape(user: str, reply: str = "") -> set[str]:
    return set(features(Window.of("make the port configurable", ANSWER, user, reply)))


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Всё ещё ошибка", ["всё", "ещё", "ошибка"]),
        ("problème pořád", ["problème", "pořád"]),
        ("还是报错", ["还", "是", "报", "错"]),
        ("don't use foo_bar-baz", ["don't", "use", "foo", "bar", "baz"]),
    ],
)
def test_words_of_every_script_are_tokens(text, expected):
    assert tokens(text, 80) == expected


def test_ascii_text_tokenizes_as_before():
    text = "It's STILL failing: TypeError at line 42 in parse_args() -- x1y2 ok?"
    assert tokens(text, 80) == [
        "it's",
        "still",
        "failing",
        "typeerror",
        "at",
        "line",
        "42",
        "in",
        "parse",
        "args",
        "x1y2",
        "ok",
    ]


def test_han_and_kana_runs_give_the_words_a_lexicon_names():
    assert with_compounds(["还", "是", "报", "错", "ok"])[5:] == ["还是", "是报", "报错", "还是报", "是报错"]
    assert "okay" not in with_compounds(["ok", "ay"])


def test_content_words_of_cyrillic_text_feed_the_overlap():
    assert {"ошибка", "конфиг"} <= content_words("Опять ошибка в конфиг файле")


def test_translated_classes_mark_a_russian_complaint():
    names = shape("Всё ещё не работает, та же ошибка")
    assert {"ul:still", "ul:neg", "ul:fail", "ul:work"} <= names


def test_chinese_two_character_words_reach_their_class():
    names = shape("还是报错，配置没有生效")
    assert {"ul:still", "ul:fail", "ul:neg"} <= names


def test_translated_words_do_not_fire_in_english_text():
    # "aider" is French for "to help" and the name of a coding tool; "u" is English shorthand.
    english_reply = "Aider applied the edit to config.py below."
    assert language_group(english_reply) == "English"
    assert "al:new" not in shape("why is it so slow", english_reply)
    assert "al:new" in shape("why is it so slow", "Sure, here is the config.")
    french = shape("pourquoi est-ce si lent", "Je peux vous aider avec la configuration.")
    assert "al:new" in french


def test_lexicon_covers_every_class_with_words_the_tokenizer_can_see():
    assert set(LEXICON) == {
        "still",
        "neg",
        "fail",
        "work",
        "you",
        "past",
        "new",
        "ask",
        "praise",
        "fix",
        "revert",
        "instead",
        "ack",
        "afix",
        "anew",
        "see",
    }
    for cls, by_language in LEXICON.items():
        for language, words in by_language.items():
            for word in words:
                where = f"{cls}/{language}: {word!r}"
                assert word == word.lower(), where
                if re.search(f"[{HAN_KANA}]", word):
                    assert 1 <= len(word) <= 3, where
                else:
                    assert tokens(word, 5) == [word], where


@pytest.mark.parametrize(
    "text",
    [
        "hataları gördün düzelt lütfen, uygulama hâlâ çöküyor",  # Turkish
        "nadal nie działa, błąd jest ten sam",  # Polish
        "het werkt nog steeds niet, ik krijg dezelfde fout",  # Dutch
        "vẫn không chạy được, lỗi như cũ",  # Vietnamese
        "intentalo ahora por favor",  # Spanish, two words
    ],
)
def test_latin_script_languages_beyond_the_first_seven_are_not_english(text):
    assert language_group(text) == "non-English"


@pytest.mark.parametrize(
    "text",
    [
        "it is still failing with the same error in parse_args",
        "now add a --dry-run flag to the CLI and update the README",
        "ok",
        "TypeError: Cannot read properties of undefined (reading 'map')",
    ],
)
def test_english_and_code_stay_english(text):
    assert language_group(text) == "English"


def test_function_word_lists_leave_out_english_words():
    lists = json.loads(resources.files("ichor").joinpath("data/function_words.json").read_text(encoding="utf-8"))
    english = set(lists.pop("en"))
    assert len(lists) == 14 and all(w == w.lower() for ws in lists.values() for w in ws)
    assert not english & {w for ws in lists.values() for w in ws}


@pytest.mark.parametrize(
    "message, rule",
    [
        ("всё равно не работает, та же ошибка", "rule:still"),
        ("sigue sin funcionar después del cambio", "rule:still"),
        ("nein, das ist falsch, die Datei heißt config.yaml", "rule:opener"),
        ("我说的是只改配置文件，不要动测试", "rule:redirect"),
    ],
)
def test_the_hand_rules_speak_other_languages(message, rule):
    assert rule in shape(message)


def test_translated_rule_phrases_are_for_non_english_messages_only():
    # "no funciona" (Spanish: "doesn't work") quoted in an English request is a string to add, not a complaint.
    assert "rule:still" not in shape('add the label "no funciona" to the es locale file, next to the other strings')
    assert "rule:still" in shape("la página de inicio no funciona con este cambio")
    assert "rule:still" not in shape("füge bitte einen neuen Endpunkt für die Benutzerliste hinzu")
