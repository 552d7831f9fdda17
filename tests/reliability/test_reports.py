"""What a run leaves behind and what a report shows: the thread numbering is put back
(SCHED-13), a thread stuck in C code is listed in ``leaked_threads`` (SCHED-12), and
text reports and the HTML page show bidi and control characters as ``<U+202E>`` and
escape every value for where it is written (TRACE-5)."""

from __future__ import annotations

import _thread
import re
import threading
from types import SimpleNamespace

import coordkit
from coordkit.engine.report import render_table, visible
from coordkit.viewer import render_html
from tests.reliability._support import broken_after, stdlib_snapshot, thread_idents

RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE: what follows it reads backwards


def test_a_thread_stuck_in_c_code_is_a_leaked_thread_and_the_numbering_is_put_back():
    before, idents = stdlib_snapshot(), thread_idents()
    held = _thread.allocate_lock()  # real: made before the run
    held.acquire()

    def stuck() -> None:
        threading.Thread(target=lambda: None, name="helper").start()
        held.acquire()  # blocks the OS thread in C: the watchdog cannot interrupt it

    result = coordkit.explore(stuck, max_schedules=3, seed=1, run_timeout=0.3)
    assert result.failure is not None and result.failure.kind == "timeout"
    assert "MainThread" in result.leaked_threads
    assert threading._counter is before["threading._counter"]
    held.release()  # the abandoned worker can now end its run, and exits
    assert broken_after(before, idents) == []


def test_visible_marks_bidi_and_control_characters():
    assert visible(f"a{RLO}b\x1b[2Jc\u2066d\u200fe") == "a<U+202E>b<U+001B>[2Jc<U+2066>d<U+200F>e"
    assert visible("line\n\tnext ü 日本") == "line\n\tnext ü 日本"


def test_a_text_report_marks_bidi_controls():
    def program() -> None:
        def body() -> None:
            raise ValueError(f"evil{RLO}txt.exe")

        t = threading.Thread(target=body, name=f"name{RLO}gpj")
        t.start()
        t.join()

    result = coordkit.explore(program, max_schedules=5, seed=1)
    text = str(result.failure)
    assert RLO not in text
    assert "evil<U+202E>txt.exe" in text and "name<U+202E>gpj" in text


def _event(**fields: object) -> SimpleNamespace:
    base = {"step": 1, "tid": 0, "kind": "acquire", "target": "Lock#1", "where": "x.py:1",
            "time": 0.0}
    return SimpleNamespace(**{**base, **fields})


HOSTILE = '"><script>alert(1)</script><img src=x onerror=alert(2)>' + RLO


def test_the_html_page_escapes_every_value_and_marks_bidi_controls():
    events = [_event(kind=HOSTILE, target=HOSTILE, where=HOSTILE),
              _event(step=2, kind="block", target=HOSTILE),
              _event(step=3, kind="call", target=HOSTILE)]
    page = render_html(events, [HOSTILE], title=HOSTILE, failure=HOSTILE, trace=HOSTILE)
    # The page's own two scripts (its data as JSON, its code) and nothing else.
    assert page.count("<script") == 2 and "<img" not in page and RLO not in page
    assert page.count("</script>") == 2
    assert "&lt;U+202E&gt;" in page and "\\u003cU+202E\\u003e" in page  # HTML text and JSON
    # Every attribute value is one quoted token: no value broke out of its quotes.
    for tag in re.findall(r"<[a-z][^>]*>", page):
        assert re.fullmatch(r'<[a-z][a-z0-9]*(\s+[\w:-]+="[^"<>]*")*\s*/?>', tag), tag


def test_the_text_table_marks_bidi_controls_in_every_cell():
    table = render_table([_event(target=f"Lock{RLO}", where=f"a{RLO}.py:1")], [f"T{RLO}"])
    assert RLO not in table and table.count("<U+202E>") == 3
