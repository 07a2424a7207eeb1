"""Every user setting, defined once: its name, type, default and help.

Values live in the store's ``settings`` table as JSON. ``get`` is the one reader (it applies the
default), ``parse`` the one validator of a value typed by a user; the command layer and ``ichor status``
list ``SETTINGS`` rather than naming keys themselves.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol


class SettingsStore(Protocol):
    def get_setting(self, key: str, default: Any = None) -> Any: ...
    def set_setting(self, key: str, value: Any) -> None: ...


class SettingError(ValueError):
    """A value a user typed that the setting does not accept; the message is one line for them."""


REPO_NAME = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/)?[A-Za-z0-9][A-Za-z0-9_.-]{0,95}$")


def _on_off(raw: str) -> bool:
    if raw.lower() in ("on", "true", "yes", "1"):
        return True
    if raw.lower() in ("off", "false", "no", "0"):
        return False
    raise SettingError(f"expected on or off, got {raw!r}")


def _repo(raw: str) -> str:
    # The Hub refuses "--" and ".." in names and a leading/trailing "-" or "."; refuse them here, not at upload.
    name = raw.rsplit("/", 1)[-1]
    if not REPO_NAME.match(raw) or "--" in raw or ".." in raw or name[-1] in "-." or name[0] in "-.":
        raise SettingError(f"invalid repository name: {raw!r}")
    return raw


def _choice(*choices: str) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        if raw not in choices:
            raise SettingError(f"expected one of {', '.join(choices)}, got {raw!r}")
        return raw

    return parse


def _absolute_path(raw: str) -> str:
    try:
        return str(Path(raw).expanduser().resolve())
    except (RuntimeError, OSError) as exc:  # "~nosuchuser/…", a symlink loop
        raise SettingError(f"not a usable path: {raw!r} ({exc})") from None


ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Tokens that are also valid variable names (a Hub token is hf_…): refused, so a pasted key is never stored.
KEY_PREFIXES = ("hf_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")


def is_env_name(raw: str) -> bool:
    """Whether ``raw`` can name an environment variable and does not look like a key itself."""
    return bool(ENV_NAME.fullmatch(raw)) and not raw.startswith(KEY_PREFIXES)


def _env_name(raw: str) -> str:
    if not is_env_name(raw):  # the value may be the key itself: never echo it
        raise SettingError("takes the name of an environment variable (letters, digits and _), not a key")
    return raw


def _text(raw: str) -> str:
    return raw.strip()


def _text_or_unset(raw: str) -> str | None:
    """A text, or None (back to the default) for "none" or nothing."""
    text = raw.strip()
    return None if text.lower() in ("", "none") else text


@dataclass(frozen=True)
class Setting:
    name: str
    default: Any
    parse: Callable[[str], Any]
    help: str
    shown: bool = True  # False for internal state (paused chats) that has its own verb
    unset: str = "(not set)"  # what status shows for no value


SETTINGS: dict[str, Setting] = {
    s.name: s
    for s in (
        Setting("data_dir", None, _absolute_path, "folder kept pairs are mirrored to (ICHOR_DATA_DIR overrides)"),
        Setting("repo", "ichor-pairs", _repo, "Hub dataset repository that share uploads to"),
        Setting("visibility", "private", _choice("private", "public"), "visibility of a dataset share creates"),
        Setting("hf_token_env", "HF_TOKEN", _env_name, "environment variable that holds the Hub token"),
        Setting("license", "cc-by-4.0", _text, "licence written on the shared dataset's card"),
        Setting("capture", True, _on_off, "capture corrections at all (off pauses everywhere)"),
        Setting("confirm", True, _on_off, "confirm detector candidates with the host's model before a card"),
        Setting(
            "confirm_model",
            None,
            _text_or_unset,
            "model for the confirmation call (Hermes allow_model_override); none: the host's model",
            unset="host's model",
        ),
        Setting("paused_scopes", (), _text, "chats where capture is paused (/ichor off)", shown=False),
    )
}


def as_text(name: str, value: Any) -> str:
    """A setting's value as status and set print it."""
    if isinstance(value, bool):
        return "on" if value else "off"
    return SETTINGS[name].unset if value in (None, "") else str(value)


def get(store: SettingsStore, name: str) -> Any:
    """The stored value of ``name``, or its default."""
    setting = SETTINGS[name]
    value = store.get_setting(name, None)
    return setting.default if value is None else value


def parse(name: str, raw: str) -> Any:
    """Validate what a user typed for ``name``; raises ``SettingError`` with one line to show."""
    key = name.replace("-", "_")
    if key not in SETTINGS or not SETTINGS[key].shown:
        known = ", ".join(n.replace("_", "-") for n, s in SETTINGS.items() if s.shown)
        raise SettingError(f"unknown setting {name!r}; settings: {known}")
    try:
        return SETTINGS[key].parse(raw)
    except SettingError as exc:
        raise SettingError(f"{key.replace('_', '-')}: {exc}") from None


def put(store: SettingsStore, name: str, raw: str) -> Any:
    """Parse and store ``raw`` for ``name``; returns the stored value."""
    value = parse(name, raw)
    store.set_setting(name.replace("-", "_"), value)
    return value


def shown(store: SettingsStore) -> dict[str, Any]:
    """Every user-facing setting with its current value, for ``ichor status``."""
    return {name: _safe_to_show(s, get(store, name)) for name, s in SETTINGS.items() if s.shown}


def _safe_to_show(setting: Setting, value: Any) -> Any:
    """An environment variable setting stored before names were checked may hold a key: never show that."""
    if setting.parse is _env_name and isinstance(value, str) and not is_env_name(value):
        return "(hidden: not a variable name; set it again)"
    return value
