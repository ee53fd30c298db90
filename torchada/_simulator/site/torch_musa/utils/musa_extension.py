"""Placeholder; the full MUSAExtension/BuildExtension/load lives here once written."""

import setuptools
from torch.utils.cpp_extension import BuildExtension as _TorchBuildExtension


class BuildExtension(_TorchBuildExtension):
    pass


def MUSAExtension(name, sources, *args, **kwargs):
    return setuptools.Extension(name, sources, *args, **kwargs)
