from . import graphs  # noqa: F401
from .graphs import *  # noqa: F401,F403
