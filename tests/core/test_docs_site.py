"""The documentation site (mkdocs.yml + docs/) stays complete and true to the code.

`tox -e docs` builds it with warnings as errors; these checks need no mkdocs.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _gen_docs():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "tools" / "gen_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_blocks_match_the_code() -> None:
    stale = _gen_docs().stale_pages()
    assert not stale, (
        f"stale generated docs: {', '.join(str(p.relative_to(ROOT)) for p in stale)}; "
        "regenerate with `python tools/gen_docs.py`"
    )


def test_every_page_is_in_the_nav_and_every_nav_entry_exists() -> None:
    config = (ROOT / "mkdocs.yml").read_text()
    nav = config[config.index("\nnav:"):]
    listed = re.findall(r":\s*([\w./-]+\.md)\s*$", nav, re.MULTILINE)
    pages = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert sorted(listed) == pages


def test_the_cli_reference_lists_every_command() -> None:
    from tablelog.cli import cli

    page = (ROOT / "docs" / "cli.md").read_text()
    for name in cli.commands:
        assert f"### `tablelog {name}`" in page, name
