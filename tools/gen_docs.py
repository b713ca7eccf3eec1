"""Regenerate the parts of docs/ that are copied from the code.

    python tools/gen_docs.py          # rewrite the generated blocks in docs/*.md
    python tools/gen_docs.py --check  # exit 1 when a block is stale (what the tests check)

A generated block sits between ``<!-- BEGIN GENERATED: name -->`` and
``<!-- END GENERATED: name -->``; :func:`blocks` says what each name holds:
the option tables of the kafka and pulsar log systems (from their
``option_specs``) and the ``--help`` of every ``tablelog`` command. The core
option table of docs/options.md has its own markers and test
(``tablelog options --markdown --log-system filesystem``, tests/core/test_docs.py).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

#: The width the help texts are wrapped at (the CLI's max_content_width).
HELP_WIDTH = 100

_BLOCK = re.compile(
    r"(<!-- BEGIN GENERATED: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- END GENERATED: (?P=name) -->)",
    re.DOTALL,
)


def option_table(specs: Iterable[Any]) -> str:
    """Markdown table of OptionSpecs, as ``tablelog options --markdown`` prints it."""
    from tablelog.cli.plugins import option_spec_table

    return option_spec_table(specs)


def kafka_options() -> str:
    from tablelog_kafka.config import option_specs

    return option_table(option_specs())


def pulsar_options() -> str:
    from tablelog_pulsar.config import option_specs

    return option_table(option_specs())


def cli_help() -> str:
    """``tablelog --help`` and ``tablelog <command> --help`` for every command."""
    from click.testing import CliRunner

    from tablelog.cli import cli

    sections = []
    for name in [None, *sorted(cli.commands)]:
        args = ["--help"] if name is None else [name, "--help"]
        # No TABLELOG_* variable from the caller's environment may show up as a default.
        runner = CliRunner(env={"TABLELOG_WAREHOUSE": None, "COLUMNS": None})
        result = runner.invoke(cli, args, prog_name="tablelog", terminal_width=HELP_WIDTH)
        if result.exit_code != 0:
            raise RuntimeError(f"tablelog {' '.join(args)} failed: {result.output}")
        title = "tablelog" if name is None else f"tablelog {name}"
        text = "\n".join(line.rstrip() for line in result.output.strip().splitlines())
        sections.append(f"### `{title}`\n\n```text\n{text}\n```")
    return "\n\n".join(sections)


def blocks() -> dict[str, Callable[[], str]]:
    return {"kafka-options": kafka_options, "pulsar-options": pulsar_options, "cli-help": cli_help}


def render(text: str, generated: dict[str, str]) -> str:
    """``text`` with every known generated block replaced by its current content."""

    def replace(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in generated:
            raise KeyError(f"unknown generated block {name!r}; known: {', '.join(generated)}")
        return f"{match.group(1)}{generated[name]}\n{match.group(4)}"

    return _BLOCK.sub(replace, text)


def stale_pages() -> dict[Path, str]:
    """Pages whose generated blocks differ from the code: page -> its regenerated text."""
    makers = blocks()
    cache: dict[str, str] = {}
    changed = {}
    for page in sorted(DOCS.glob("*.md")):
        text = page.read_text()
        names = {m.group("name") for m in _BLOCK.finditer(text)}
        if not names:
            continue
        for name in names:
            if name not in cache:
                cache[name] = makers[name]()
        new = render(text, cache)
        if new != text:
            changed[page] = new
    return changed


def main(argv: list[str]) -> int:
    changed = stale_pages()
    if "--check" in argv:
        for page in changed:
            print(f"stale: {page.relative_to(ROOT)} (run: python tools/gen_docs.py)")
        return 1 if changed else 0
    for page, text in changed.items():
        page.write_text(text)
        print(f"updated {page.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
