"""A Ctrl-C whose KeyboardInterrupt Python drops (raised inside a finaliser) still ends the waits."""

from __future__ import annotations

import gc
import signal
import threading
import time

import pytest

from voxarena.orchestrator import ctrl_c
from voxarena.orchestrator.fleet.clients import wait_for_serving

# The dropped KeyboardInterrupt is what these tests make: pytest reports it as unraisable.
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(ctrl_c, "_seen", threading.Event())
    before = signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGINT, before)


class Finalised:
    def __del__(self) -> None:
        ctrl_c._on_sigint(signal.SIGINT, None)  # the signal lands while a finaliser runs


def test_an_interrupt_dropped_in_a_finaliser_is_raised_by_the_next_check(fresh):
    Finalised()  # Python prints "Exception ignored in ..." and goes on
    gc.collect()
    with pytest.raises(KeyboardInterrupt):
        ctrl_c.check()


def test_without_a_ctrl_c_check_does_nothing(fresh):
    ctrl_c.check()


def test_the_start_up_wait_ends_at_a_dropped_ctrl_c(fresh):
    """wait_for_serving would poll a silent address for 60 s; after a dropped Ctrl-C it stops at once."""
    Finalised()
    gc.collect()
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        wait_for_serving("127.0.0.1:9", "nobody", timeout=60)
    assert time.monotonic() - t0 < 5


def test_install_sets_the_handler_from_the_main_thread_only(fresh):
    ctrl_c.install()
    assert signal.getsignal(signal.SIGINT) is ctrl_c._on_sigint
    signal.signal(signal.SIGINT, signal.default_int_handler)
    t = threading.Thread(target=ctrl_c.install)
    t.start()
    t.join()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
