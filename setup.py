"""Ships the native sources in wheels: csrc/ is copied into the package as ``torchada/_csrc``
(where ``torchada._native.build.csrc_dir`` looks first). Editable installs read csrc/ in place."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithNativeSources(build_py):
    def run(self) -> None:
        super().run()
        if not getattr(self, "editable_mode", False):
            source = Path(__file__).resolve().parent / "csrc"
            shutil.copytree(source, Path(self.build_lib) / "torchada" / "_csrc", dirs_exist_ok=True)


setup(cmdclass={"build_py": BuildPyWithNativeSources})
