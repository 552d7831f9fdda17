"""SCHED-4h, SCHED-4f: what runs for real keeps real time inside a controlled run.

A child process is real: ``subprocess.run(..., timeout=30)``, ``Popen.wait(timeout)`` and
``communicate(timeout)`` measure their timeout on the real clock (on the virtual one,
which jumps ahead whenever every controlled thread waits, it expired at once).  A
socket's timeout is the operating system's, in real time.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import coordkit
from coordkit import sync

CHILD = [sys.executable, "-c", "pass"]


def test_subprocess_run_with_a_timeout_succeeds_inside_a_run():
    def program() -> int:
        return subprocess.run(CHILD, timeout=30).returncode

    assert coordkit.run(program) == 0
    assert coordkit.explore(program, max_schedules=2, seed=1).ok


def test_communicate_with_a_timeout_reads_the_child_output():
    def program() -> bytes:
        done = subprocess.run([sys.executable, "-c", "print(42)"], timeout=30,
                              capture_output=True)
        return done.stdout.strip()

    assert coordkit.run(program) == b"42"


def test_popen_wait_times_out_in_real_time_and_the_virtual_clock_stays():
    def program() -> tuple[float, float, int]:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        virtual, real = time.monotonic(), sync.real_monotonic()
        try:
            child.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            pass
        waited = sync.real_monotonic() - real
        child.kill()
        return waited, time.monotonic() - virtual, child.wait(timeout=30)

    waited, virtual, code = coordkit.run(program)
    assert waited >= 0.19 and virtual == 0.0 and code != 0


def test_a_socket_timeout_is_real_time():
    def program() -> tuple[float, float]:
        a, b = socket.socketpair()
        with a, b:
            a.settimeout(0.1)
            virtual, real = time.monotonic(), sync.real_monotonic()
            try:
                a.recv(1)
            except TimeoutError:
                pass
            return sync.real_monotonic() - real, time.monotonic() - virtual

    waited, virtual = coordkit.run(program)
    assert waited >= 0.09 and virtual == 0.0


def test_other_threads_keep_virtual_time_while_one_waits_for_a_child():
    def program() -> float:
        import threading

        slept = []

        def sleeper() -> None:
            start = time.monotonic()
            time.sleep(60)  # virtual: costs no wall time
            slept.append(time.monotonic() - start)

        t = threading.Thread(target=sleeper)
        t.start()
        subprocess.run(CHILD, timeout=30)
        t.join()
        return slept[0]

    assert coordkit.run(program) == 60.0
