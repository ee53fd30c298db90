"""torchada._core.arguments.rewriting: one argument rewritten however it was passed."""

from __future__ import annotations

import contextlib

from torchada._core.arguments import rewriting


def _target(x, device="cuda", *, flag=False):
    return (x, device, flag)


def test_rewrites_positional_keyword_and_default_arguments():
    def to_musa(arguments):
        if "device" in arguments:
            arguments["device"] = arguments["device"].replace("cuda", "musa")

    plain, filled = rewriting(_target, to_musa), rewriting(_target, to_musa, defaults=True)
    assert plain(1, "cuda:1") == (1, "musa:1", False)
    assert plain(1, device="cuda", flag=True) == (1, "musa", True)
    assert plain(1) == (1, "cuda", False)  # left out, and no defaults asked for
    assert filled(1) == (1, "musa", False)
    assert filled.__name__ == "_target" and filled.__wrapped__ is _target


def test_a_returned_context_wraps_the_call():
    seen = []

    @contextlib.contextmanager
    def around():
        seen.append("enter")
        yield
        seen.append("exit")

    wrapped = rewriting(lambda x: seen.append(x) or x, lambda arguments: around())
    assert wrapped(5) == 5 and seen == ["enter", 5, "exit"]
