"""SIGTERM and SIGINT as a request to stop a long-running command, set on an event.

A Python signal handler runs in the main thread between two bytecodes, possibly while
that thread holds the lock inside ``threading.Event.wait``: a handler that sets the
event there waits for that lock forever. So the handler only writes a byte to a pipe; a
watcher thread reads it and sets the event.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from typing import Any

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def stop_on_signals(*, second_interrupts: bool = False) -> Iterator[threading.Event]:
    """An event set by the first SIGTERM or SIGINT while the block runs; with
    ``second_interrupts``, a second one raises :class:`KeyboardInterrupt` in the main
    thread (stop now, not after the step under way). Outside the main thread (a command
    embedded in an application) the signals are left alone and the event is never set."""
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    received = [0]

    def on_signal(signum: int, frame: Any) -> None:
        received[0] += 1
        if second_interrupts and received[0] > 1:
            raise KeyboardInterrupt
        with contextlib.suppress(BlockingIOError):
            os.write(write_end, b"\0")

    def watch() -> None:
        while os.read(read_end, 1):
            stop.set()

    watcher = threading.Thread(target=watch, name="tablelog-stop-signals", daemon=True)
    watcher.start()
    previous = {s: signal.signal(s, on_signal) for s in _SIGNALS}
    try:
        yield stop
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        os.close(write_end)  # the watcher reads the end of the pipe and returns
        watcher.join()
        os.close(read_end)
