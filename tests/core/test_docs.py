"""The docs stay true to the code."""

from pathlib import Path

from click.testing import CliRunner

from tablelog.cli import cli

ROOT = Path(__file__).resolve().parents[2]


def test_option_reference_page_is_the_generated_table() -> None:
    # The built-in log system only: the page must not depend on which plugins are installed.
    generated = CliRunner().invoke(cli, ["options", "--markdown", "--log-system", "filesystem"]).output.strip()
    page = (ROOT / "docs" / "options.md").read_text()
    inside = page.split("<!-- BEGIN GENERATED -->")[1].split("<!-- END GENERATED -->")[0].strip()
    assert inside == generated, (
        "docs/options.md is stale: regenerate with `tablelog options --markdown --log-system filesystem`"
    )


def test_readme_has_the_two_setup_commands_that_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    test_command = 'python3 -m pip install "tox>=4.11" "tox-uv>=1.11" && python3 -m tox'
    assert test_command in readme and test_command in ci
    assert "tablelog demo" in readme


def test_the_plugin_guide_documents_every_name_of_the_test_kit_and_no_test_counts() -> None:
    import re

    import tablelog.testing

    guide = (ROOT / "docs" / "plugins.md").read_text()
    missing = [name for name in tablelog.testing.__all__ if f"`{name}" not in guide]
    assert missing == [], f"docs/plugins.md does not document {missing}"
    # Counts go stale with every test added: the guide says how to list the tests instead.
    assert not re.search(r"\b\d+\s+tests\b", guide), "docs/plugins.md hard-codes a test count"
