"""README_CN.md is kept in step with README.md: the same sections, in the same order, and the
same commands in its code blocks (comments after '#' may be translated)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _sections(text: str) -> list:
    # "## Quick start（快速开始）" and "## Quick start" are the same section.
    out = []
    in_code = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and re.match(r"#{1,3} ", line):
            level, title = line.split(" ", 1)
            out.append((len(level), re.sub(r"（.*）$", "", title).strip()))
    return out


def _commands(text: str) -> list:
    out = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            command = line.split("  #", 1)[0].strip()
            if command and not command.startswith("#"):
                out.append(command)
    return out


def test_same_sections_in_the_same_order():
    english = (REPO / "README.md").read_text(encoding="utf-8")
    chinese = (REPO / "README_CN.md").read_text(encoding="utf-8")
    assert _sections(chinese) == _sections(english)
    assert len(_sections(english)) >= 15


def test_same_commands():
    english = (REPO / "README.md").read_text(encoding="utf-8")
    chinese = (REPO / "README_CN.md").read_text(encoding="utf-8")
    assert _commands(chinese) == _commands(english)
    assert "bash tools/test.sh" in _commands(english)
