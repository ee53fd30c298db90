"""Renders the registry as Markdown (docs/torch_cuda_names.md): the README's table comes from the
same data that drives the redirects and the tests."""

from __future__ import annotations

from typing import List

from .._core import tables as _tables
from .redirect import load_table

KIND_WORDS = {
    "renamed": "renamed",
    "filled": "filled by torchada",
    "unsupported": "unsupported",
    "original": "torch's own",
    "submodule": "submodule",
}


def render_cuda_table() -> str:
    lines: List[str] = [
        "# torch.cuda on MUSA, name by name",
        "",
        "Generated from `torchada/tables/torch_cuda.json` (and the other module tables) by "
        "`python -m torchada tables`; "
        "do not edit.",
        "Every other public name resolves to the same name on torch_musa.",
        "",
    ]
    modules = dict(load_table())
    # torch._C's private CUDA bindings (tables/torch_c.json), set on torch._C itself.
    modules.update(_tables.load("torch_c").modules)
    for module_name, spec in modules.items():
        target = {None: "(none)", "@original": "its own module, with overrides"}.get(
            spec.target, spec.target
        )
        lines += [f"## `{module_name}` → `{target}`", ""]
        if spec.unsupported:
            why, instead = spec.unsupported
            lines += [f"Unsupported as a whole: {why}. Instead, {instead}.", ""]
        if not spec.names:
            continue
        lines += ["| name | on MUSA | details |", "|---|---|---|"]
        for name, entry in sorted(spec.names.items()):
            kind = entry.kind
            if kind == "renamed":
                detail = f"`{entry.to}`" + (f" ({entry.note})" if entry.note else "")
            elif kind == "unsupported":
                detail = f"{entry.why}; instead, {entry.instead}"
            elif kind == "submodule":
                detail = f"`{entry.module}`"
            else:
                detail = entry.note
            lines.append(f"| `{name}` | {KIND_WORDS[kind]} | {detail} |")
        lines.append("")
    return "\n".join(lines)


SWITCHES_BEGIN = "<!-- switches: generated from torchada/tables/switches.json -->"
SWITCHES_END = "<!-- switches: end -->"


def with_switch_table(readme: str) -> str:
    """``readme`` with the text between the switch-table markers replaced by the table generated
    from ``tables/switches.json``; ValueError when the markers are missing."""
    from .._core.env import markdown_table

    start, end = readme.find(SWITCHES_BEGIN), readme.find(SWITCHES_END)
    if start < 0 or end < start:
        raise ValueError(f"README.md lacks the markers {SWITCHES_BEGIN!r} ... {SWITCHES_END!r}")
    head = readme[: start + len(SWITCHES_BEGIN)]
    return head + "\n" + markdown_table() + "\n" + readme[end:]


HELP = """usage: python -m torchada tables

Writes docs/torch_cuda_names.md from torchada/tables/*.json and the switch table in README.md
(between its markers) from torchada/tables/switches.json, in the source checkout that holds this
torchada; a test fails while either is out of date.

options:
  -h, --help  show this help message and exit

Examples:
  # after editing torchada/tables/*.json, in the checkout
  python -m torchada tables
"""


def main(argv: List[str]) -> int:
    import os
    import sys

    # Without this, --help (or a typo) would rewrite the files instead of explaining them.
    if argv and argv[0] in ("-h", "--help"):
        print(HELP, end="")
        return 0
    if argv:
        print(f"python -m torchada tables: unknown argument {argv[0]!r}", file=sys.stderr)
        return 2
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.path.join(root, "docs", "torch_cuda_names.md")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(render_cuda_table())
    print(f"wrote {path}")
    readme = os.path.join(root, "README.md")
    with open(readme, encoding="utf-8") as fh:
        text = fh.read()
    with open(readme, "w", encoding="utf-8") as fh:
        fh.write(with_switch_table(text))
    print(f"wrote the switch table in {readme}")
    return 0
