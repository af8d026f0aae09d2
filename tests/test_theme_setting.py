"""The Textual theme chosen in the palette is kept in config.toml (issue 16): only the `theme`
line is written, the rest of the file and its comments stay as they were."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable
from pathlib import Path

from agent.settings import Settings, load_settings
from tests.support.pilot_helpers import wait_until
from tui.app import StraylightApp
from tui.theme_setting import save_theme, with_theme

CONFIG = """\
# my settings
model = "qwen3"  # the chat model
theme = "nord"   # picked in the palette

[keymap]
new_conversation = "ctrl+o"
theme = "not this one"
"""


def test_the_theme_line_is_replaced_and_nothing_else_changes() -> None:
    updated = with_theme(CONFIG, "gruvbox")
    assert updated == CONFIG.replace('theme = "nord"   #', 'theme = "gruvbox"  #')
    assert tomllib.loads(updated)["keymap"]["theme"] == "not this one"


def test_a_missing_theme_line_goes_before_the_first_table_or_at_the_end() -> None:
    text = '# top\nmodel = "qwen3"\n\n[keymap]\nquit = "ctrl+q"\n'
    updated = with_theme(text, "nord")
    assert updated == '# top\nmodel = "qwen3"\n\ntheme = "nord"\n[keymap]\nquit = "ctrl+q"\n'
    assert tomllib.loads(updated)["theme"] == "nord"
    assert with_theme('model = "x"', "nord") == 'model = "x"\ntheme = "nord"\n'
    assert with_theme("", "nord") == 'theme = "nord"\n'


def test_save_theme_writes_the_file_and_refuses_broken_toml(tmp_path: Path) -> None:
    path = tmp_path / "conf" / "config.toml"
    save_theme(path, "nord")
    assert path.read_text(encoding="utf-8") == 'theme = "nord"\n'
    assert path.stat().st_mode & 0o777 == 0o600
    broken = tmp_path / "broken.toml"
    broken.write_text("model = [1\n", encoding="utf-8")
    try:
        save_theme(broken, "nord")
    except Exception as error:  # noqa: BLE001
        assert "not valid TOML" in str(error)
    assert broken.read_text(encoding="utf-8") == "model = [1\n"


def app_with_config(tmp_path: Path) -> tuple[Path, StraylightApp]:
    """A config.toml of CONFIG (theme nord) and the app started from its settings."""
    path = tmp_path / "config.toml"
    path.write_text(CONFIG, encoding="utf-8")
    settings = load_settings(flags={"home": str(tmp_path / "home")}, environ={}, config_path=path)
    return path, StraylightApp(settings.settings, config_path=path, poll_online_seconds=600)


async def test_a_theme_chosen_in_the_app_is_kept_at_the_next_start(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    path, app = app_with_config(tmp_path)
    assert app.settings.theme == "nord"
    async with app.run_test(size=(100, 30)) as pilot:
        assert app.theme == "nord"  # the setting applied at start
        app.theme = "gruvbox"  # what the palette's "Change theme" does
        await wait_until(
            pilot, lambda: 'theme = "gruvbox"' in path.read_text(encoding="utf-8"), what="saved"
        )
    assert path.read_text(encoding="utf-8") == with_theme(CONFIG, "gruvbox")
    again = load_settings(flags={"home": str(tmp_path / "home")}, environ={}, config_path=path)
    assert again.settings.theme == "gruvbox"


async def test_switching_back_to_the_starting_theme_is_kept_too(tmp_path: Path) -> None:
    """nord at start → gruvbox → nord again: the file ends with nord, not gruvbox."""
    path, app = app_with_config(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        app.theme = "gruvbox"
        await wait_until(
            pilot, lambda: 'theme = "gruvbox"' in path.read_text(encoding="utf-8"), what="saved"
        )
        app.theme = "nord"
        await wait_until(
            pilot, lambda: 'theme = "nord"' in path.read_text(encoding="utf-8"), what="back"
        )
    assert path.read_text(encoding="utf-8") == with_theme(with_theme(CONFIG, "gruvbox"), "nord")


def test_a_theme_written_under_its_environment_name_is_the_line_replaced(
    tmp_path: Path,
) -> None:
    """config.toml may name the setting `STRAYLIGHT_THEME` (any case); the palette's choice
    replaces that line instead of adding a second key, which the settings would refuse."""
    path = tmp_path / "config.toml"
    path.write_text('STRAYLIGHT_THEME = "nord"  # mine\nmodel = "qwen3"\n', encoding="utf-8")
    save_theme(path, "gruvbox")
    assert path.read_text(encoding="utf-8") == 'theme = "gruvbox"  # mine\nmodel = "qwen3"\n'
    resolved = load_settings(environ={}, config_path=path)
    assert resolved.settings.theme == "gruvbox"


def test_a_config_toml_that_is_a_link_keeps_its_link_and_the_theme_lands_in_its_target(
    tmp_path: Path,
) -> None:
    """A config.toml kept in a dotfiles repo and linked into ~/.config (stow, home-manager…):
    the palette's theme is written into the file the link names, and the link stays a link."""
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "straylight.toml"
    target.write_text('model = "qwen3"  # mine\n', encoding="utf-8")
    target.chmod(0o644)
    link = tmp_path / "conf" / "config.toml"
    link.parent.mkdir()
    link.symlink_to(target)
    narrowed = os.umask(0o077)  # as in the chat, once its database is open
    try:
        save_theme(link, "gruvbox")
    finally:
        os.umask(narrowed)
    assert link.is_symlink() and link.resolve() == target
    assert target.read_text(encoding="utf-8") == 'model = "qwen3"  # mine\ntheme = "gruvbox"\n'
    assert target.stat().st_mode & 0o777 == 0o644  # the target keeps its mode
    assert sorted(p.name for p in link.parent.iterdir()) == ["config.toml"]  # no temp left
    assert load_settings(environ={}, config_path=link).settings.theme == "gruvbox"


async def test_a_theme_that_cannot_be_saved_is_named_in_a_warning(tmp_path: Path) -> None:
    path, app = app_with_config(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        path.write_text("model = [broken\n", encoding="utf-8")  # edited meanwhile, badly
        app.theme = "gruvbox"
        await wait_until(
            pilot,
            lambda: any(n.severity == "warning" for n in app._notifications),
            what="the warning",
        )
        [warning] = [n for n in app._notifications if n.severity == "warning"]
        assert str(path) in warning.message
    assert path.read_text(encoding="utf-8") == "model = [broken\n"
