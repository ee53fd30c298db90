"""Ships the native sources in wheels: csrc/ is copied into the package as ``torchada/_csrc``
(where ``torchada._native.build.csrc_dir`` looks first). Editable installs read csrc/ in place.

Ships ``torchada.pth`` at the top of site-packages (wheels and editable installs alike, so that
``pip uninstall`` removes it): at interpreter start it chooses the visible devices of a process
torchada is active in, before anything imports torch (see ``torchada_startup``)."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
PTH = "torchada.pth"


class BuildPyWithNativeSources(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            # An editable wheel holds what is installed beside the project's own link (its
            # ``__editable__`` .pth, which sorts before ours, so torchada_startup is importable
            # when ours runs): the install command's library directory is that wheel's root.
            target = Path(self.get_finalized_command("install").install_lib)
        else:
            target = Path(self.build_lib)
            shutil.copytree(HERE / "csrc", target / "torchada" / "_csrc", dirs_exist_ok=True)
        target.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(HERE / PTH, target / PTH)

    def get_outputs(self, include_bytecode: bool = True) -> list:
        outputs = list(super().get_outputs(include_bytecode))
        if not getattr(self, "editable_mode", False):
            outputs.append(str(Path(self.build_lib) / PTH))
        return outputs


setup(cmdclass={"build_py": BuildPyWithNativeSources})
