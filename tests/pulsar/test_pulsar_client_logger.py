"""Which logger the Pulsar client is given: tablelog's Python logger only while something
shows its lines, since a client thread that logs through Python while the interpreter
finalizes aborts the process (apache/pulsar-client-python#256)."""

from __future__ import annotations

import logging

from tablelog_pulsar.connection import shows_lines


def chain() -> tuple[logging.Logger, logging.Logger, logging.Logger]:
    """A client logger with a NullHandler of its own under a package logger and a root,
    none of them registered, so that the test's own logging setup does not count."""
    root, package, client = logging.Logger("root"), logging.Logger("pkg"), logging.Logger("pkg.client")
    package.parent, client.parent = root, package
    client.addHandler(logging.NullHandler())
    return root, package, client


def test_a_logger_with_only_null_handlers_up_its_chain_shows_no_lines() -> None:
    _, _, client = chain()
    assert not shows_lines(client)


def test_a_handler_on_an_ancestor_shows_the_lines() -> None:
    root, _, client = chain()
    root.addHandler(logging.StreamHandler())  # as `tablelog -v` or a program's basicConfig
    assert shows_lines(client)


def test_a_handler_above_a_logger_that_does_not_propagate_shows_nothing() -> None:
    root, package, client = chain()
    root.addHandler(logging.StreamHandler())
    package.propagate = False
    assert not shows_lines(client)
