from .graphs import *  # noqa: F401,F403
from . import graphs  # noqa: F401
