"""SIGTERM and SIGINT as a stop request for the long-running commands (relay, compact --follow)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from tablelog.cli.stop_signals import stop_on_signals


def test_the_first_signal_sets_the_stop_event() -> None:
    with stop_on_signals() as stop:
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.wait(5)


def test_a_second_signal_interrupts_when_asked_to() -> None:
    with pytest.raises(KeyboardInterrupt), stop_on_signals(second_interrupts=True) as stop:
        os.kill(os.getpid(), signal.SIGINT)
        assert stop.wait(5)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler raises at once


def test_the_previous_handlers_are_back_after_the_block() -> None:
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    with stop_on_signals():
        pass
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


def test_signals_arriving_while_the_main_thread_waits_on_the_event_never_hang_it() -> None:
    # A handler that set the event itself could run while the main thread held the
    # event's lock (inside wait) and wait for that lock forever; a burst of signals
    # during a waiting loop hits that moment.
    program = textwrap.dedent("""
        import os, signal, threading, time
        from tablelog.cli.stop_signals import stop_on_signals
        with stop_on_signals() as stop:
            sent = threading.Event()
            def send():
                for _ in range(2000):
                    os.kill(os.getpid(), signal.SIGTERM)
                    time.sleep(0.001)
                sent.set()
            threading.Thread(target=send, daemon=True).start()
            while not sent.is_set():
                stop.wait(0.0001)
            assert stop.is_set()
        print("stopped cleanly")
    """)
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout.strip()) == (0, "stopped cleanly"), done.stderr[-2000:]
