"""torch.cuda.nvtx on MUSA: markers are no-ops, as torch_musa's profiler stubs are."""

from contextlib import contextmanager

__all__ = ["mark", "range_push", "range_pop", "range_start", "range_end", "range"]

_depth = [0]


def range_push(msg: str) -> int:
    _depth[0] += 1
    return _depth[0] - 1


def range_pop() -> int:
    if _depth[0] == 0:
        return -1
    _depth[0] -= 1
    return _depth[0]


def range_start(msg: str) -> int:
    return 0


def range_end(range_id: int) -> None:
    pass


def mark(msg: str) -> None:
    pass


@contextmanager
def range(msg: str, *args, **kwargs):
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()
