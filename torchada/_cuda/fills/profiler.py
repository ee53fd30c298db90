"""torch.cuda.profiler on MUSA: musart has no profiler start/stop, so these only warn once."""

import contextlib

from ..._core.warn import warn_once

__all__ = ["init", "start", "stop", "profile"]


def _warn() -> None:
    warn_once(
        "cuda_profiler",
        "torch.cuda.profiler start/stop have no MUSA counterpart and do nothing; "
        "use torch.profiler.profile(activities=[ProfilerActivity.CUDA]) instead",
    )


def init(output_file=None, flags=None, output_mode="key_value"):
    _warn()


def start():
    _warn()


def stop():
    _warn()


@contextlib.contextmanager
def profile():
    start()
    try:
        yield
    finally:
        stop()
