"""What the simulated torch_musa knows about its devices, kept outside the ``torch_musa``
namespace (real torch_musa has no such names): set once by its ``__init__``."""

from typing import List, Optional

from .config import SimConfig

config: Optional[SimConfig] = None
device_properties: List = []  # one _MusaDeviceProperties per visible device
arch_flags: str = ""  # the simulated board's architecture, "22" for mp_22
