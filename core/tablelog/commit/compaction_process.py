"""A writer's background compaction rewrites its pairs in a child process of lower CPU
priority (``compaction.background.nice``).

On a machine whose cores the writers keep busy, a compaction thread in the writer's own
process slows every write it overlaps: it takes its share of the cores and, in the
process that commits, holds the interpreter's lock between its Arrow calls. A child
process at a lower priority (a higher nice value) takes the CPU the writers leave and
shares no lock with them. The maintainer's thread still plans and commits (both read
little); only the rewrites of pairs (:func:`~tablelog.commit.compaction.rewrite_pair`)
go to the child, one at a time, over a pipe of pickles. A pair past
``num-sorted-run.stop-trigger`` that writers wait for, or one at twice that, is
rewritten in the writer's process at its priority (a child's rewrite stopped, its files
deleted, and done again there), so that the writes never wait on a starved child.

The child is started at the first rewrite and ends with the maintainer's thread (when the
last writer closes, after its idle time, at interpreter exit), or by itself when its
parent's end of the pipe closes. A child that dies fails the compaction it was in (the
maintainer reports it with the next commit, and nothing is committed); the next rewrite
starts another one.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

from tablelog.commit.compaction_threads import Pacer
from tablelog.errors import CommitError

if TYPE_CHECKING:
    from tablelog.commit.compaction_commit import PairRewrite, PairTask
    from tablelog.table_view import TableView

logger = logging.getLogger("tablelog.maintenance")

#: How long the child may take to end once asked, before it is killed.
STOP_WAIT_S = 10.0
#: How often a rewrite waiting for the child asks whether to hurry.
HURRY_CHECK_S = 0.5
_HEADER = struct.Struct("!Q")
#: The child's program (not ``-m``: the package imports this module first).
_CHILD = "import sys; from tablelog.commit.compaction_process import main; main(sys.argv[1:])"


class RewriteProcess:
    """One maintainer's child process of priority ``nice`` (1-19) for pair rewrites."""

    def __init__(self, nice: int) -> None:
        self.nice = nice
        self._child: subprocess.Popen[bytes] | None = None
        self._requests: IO[bytes] | None = None
        self._answers: IO[bytes] | None = None
        self._lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        """The running child's process id (None: none runs)."""
        child = self._child
        return child.pid if child is not None and child.poll() is None else None

    def rewrite(self, table: TableView, task: PairTask, share: float = 1.0,
                hurry: Callable[[], bool] = lambda: False) -> PairRewrite | None:
        """``task`` rewritten in the child (started first if none runs), working ``share``
        of the time (``compaction.background.duty-cycle``); None when ``hurry()``, asked
        every :data:`HURRY_CHECK_S` while it waits, came true: the child was stopped (it
        deletes the files it had written) for the caller to rewrite the pair at its own
        priority. Raises :class:`~tablelog.errors.CommitError` when the child fails the
        rewrite or dies."""
        warehouse = table.warehouse
        request = pickle.dumps(((warehouse.path, dict(warehouse.storage_options)), table.identifier, task, share))
        with self._lock:
            if self.pid is None:
                self._end()  # one that died since its last rewrite: reaped, its pipes closed
                self._start()
            assert self._requests is not None and self._answers is not None
            try:
                _send(self._requests, request)
                while not select.select([self._answers], [], [], HURRY_CHECK_S)[0]:
                    if hurry():
                        self._abandon()
                        return None
                answer = _receive(self._answers)
            except OSError:
                answer = None
            if answer is None:
                code = self._end()
                raise CommitError(f"table {table.identifier!r}: the background compaction's process ended "
                                  f"(exit code {code}) while rewriting bucket {task.files.bucket}; nothing was "
                                  "committed, and the next compaction starts another")
        done, value = pickle.loads(answer)
        if not done:
            raise CommitError(f"table {table.identifier!r}: background compaction of bucket {task.files.bucket}: {value}")
        return value  # type: ignore[no-any-return]

    def stop(self) -> None:
        """Ask the child to end (it finishes the rewrite it is in), and wait for it."""
        with self._lock:
            self._end()

    def _start(self) -> None:
        requests_read, requests_write = os.pipe()
        answers_read, answers_write = os.pipe()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(path for path in sys.path if path)}
        try:
            self._child = subprocess.Popen(
                [sys.executable, "-c", _CHILD, str(self.nice), str(requests_read), str(answers_write)],
                pass_fds=(requests_read, answers_write), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                env=env)  # stderr kept: the child's warnings and a crash's traceback
        finally:
            os.close(requests_read)
            os.close(answers_write)
        self._requests = os.fdopen(requests_write, "wb")
        self._answers = os.fdopen(answers_read, "rb")
        logger.info("background compaction process %d started at nice %d", self._child.pid, self.nice)

    def _abandon(self) -> None:
        """Stop the child mid-rewrite without waiting for it (SIGTERM: it deletes the files
        it had written and ends, at its low priority; a thread reaps it)."""
        child = self._child
        if child is not None:
            child.terminate()
            self._child = None
            threading.Thread(target=child.wait, daemon=True, name="tablelog-compaction-reaper").start()
        self._end()

    def _end(self) -> int | None:
        child, requests, answers = self._child, self._requests, self._answers
        self._child = self._requests = self._answers = None
        if child is None:
            return None
        for stream in (requests, answers):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        try:
            return child.wait(STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            child.kill()
            return child.wait()


class BackgroundRewrites:
    """Where a maintainer's compaction rewrites its pairs, as the table's options say."""

    def __init__(self) -> None:
        self._process: RewriteProcess | None = None
        self._lock = threading.Lock()

    def choose(self, table: TableView, cancel: threading.Event, behind: Callable[[], bool]) -> tuple[
            Callable[[], None] | None, Callable[[PairTask], PairRewrite] | None]:
        """``pace`` and ``rewrite`` for :func:`~tablelog.commit.compaction.compact`: each
        pair in the child process of ``compaction.background.nice``, working
        ``compaction.background.duty-cycle`` of the time, and here at full speed once
        ``behind()`` (writers wait for it, or the writes outpace it; asked now, before each
        pair and while the child rewrites): all here at full speed when it already is.
        Nice 0: here, paced."""
        share, nice = table.options.compaction_background_duty_cycle, table.options.compaction_background_nice
        if behind():
            return None, None
        if not nice:
            return (None if share >= 1 else Pacer(share, wait=cancel.wait)), None
        with self._lock:
            old = self._process if self._process is not None and self._process.nice != nice else None
            if self._process is None or old is not None:
                self._process = RewriteProcess(nice)
            process = self._process
        if old is not None:
            old.stop()

        def rewrite(task: PairTask) -> PairRewrite:
            from tablelog.commit.compaction import rewrite_pair

            if not behind() and (done := process.rewrite(table, task, share, hurry=behind)) is not None:
                return done
            return rewrite_pair(table, task)

        return None, rewrite

    @property
    def pid(self) -> int | None:
        """The child process's id while one runs."""
        process = self._process
        return None if process is None else process.pid

    def stop(self) -> None:
        with self._lock:
            process, self._process = self._process, None
        if process is not None:
            process.stop()


def _send(stream: IO[bytes], payload: bytes) -> None:
    stream.write(_HEADER.pack(len(payload)) + payload)
    stream.flush()


def _receive(stream: IO[bytes]) -> bytes | None:
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    payload = stream.read(size)
    return payload if len(payload) == size else None


def _serve(requests: IO[bytes], answers: IO[bytes], nice: int) -> None:
    """The child: rewrite each task it is sent, until the parent closes the pipe. A
    rewrite whose answer does not reach the parent (it stopped waiting: SIGTERM, its end
    of the pipe closed) has its files deleted: nobody will commit them."""
    from tablelog.commit.compaction import rewrite_files
    from tablelog.store.warehouse import Warehouse

    _lower_priority(nice)  # after the imports: a busy machine would stretch them over seconds
    opened: dict[str, Any] = {}
    while (request := _receive(requests)) is not None:
        files, task, done = None, None, None
        try:
            try:
                (location, storage_options), identifier, task, share = pickle.loads(request)
                files = opened.get(identifier)
                if files is None or files.schema_id < max(int(f.schema_id) for f in task.files.files):
                    files = opened[identifier] = Warehouse(location, storage_options).open(identifier)
                done = rewrite_files(files, task, Pacer(share) if share < 1 else None)
                answer: tuple[bool, Any] = (True, done)
            except Exception as err:  # noqa: BLE001 -- the parent raises it
                answer = (False, f"{type(err).__name__}: {err}")
            _send(answers, pickle.dumps(answer))
        except BaseException:
            if files is not None and task is not None and done is not None:
                files.compactions().delete_rewritten([(task.files, done.new_files)])
            raise


def _lower_priority(steps: int) -> None:
    """Every thread of this process ``steps`` nice steps lower: Linux's nice value is a
    thread's (the imports started some, jemalloc's among them), and threads started later
    inherit their starter's."""
    try:
        threads = [int(task) for task in os.listdir("/proc/self/task")]
    except OSError:
        os.nice(steps)
        return
    for thread in threads:
        with contextlib.suppress(OSError):  # ended meanwhile
            os.setpriority(os.PRIO_PROCESS, thread, min(19, os.getpriority(os.PRIO_PROCESS, thread) + steps))


def _stopped(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)  # a rewrite under way deletes its files on the way out


def main(argv: list[str]) -> None:
    nice, requests, answers = (int(arg) for arg in argv)
    signal.signal(signal.SIGTERM, _stopped)
    try:
        with os.fdopen(requests, "rb") as read, os.fdopen(answers, "wb") as write:
            _serve(read, write, nice)
    except (BrokenPipeError, SystemExit):
        pass  # the parent stopped waiting or asked it to end: nothing to say
