"""The write path: rows in, table files and log records out.

:mod:`~tablelog.writing.inputs` (what a caller may pass as rows and row kinds),
:mod:`~tablelog.writing.casting` (rows cast to the table's types, refused with the
column and value when they do not fit), :mod:`~tablelog.writing.routing` (each row's
bucket and log partition) and :mod:`~tablelog.writing.writer` (a write task and a
writer: Paimon data files and log records of one attempt, receipts for the commit).
"""
