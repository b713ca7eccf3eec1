"""``tablelog ui``: a dashboard of a warehouse's tables, served by FastAPI.

Importing this package imports no web framework: :mod:`tablelog.ui.figures` is shared
with ``tablelog describe``; only :mod:`tablelog.ui.app` needs the ``ui`` extra.
"""
