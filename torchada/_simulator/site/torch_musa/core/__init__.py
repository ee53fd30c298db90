"""torch_musa.core: the device runtime's Python side."""

from ._lazy_init import _lazy_init


def current_blas_handle():
    _lazy_init()
    return 0x6D75626C  # an opaque, stable non-zero handle, as mublasHandle_t would be


def current_blaslt_handle():
    _lazy_init()
    return 0x6D756C74
