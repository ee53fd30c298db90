"""Renders the registry as Markdown (docs/torch_cuda_names.md): the README's table comes from the
same data that drives the redirects and the tests."""

from __future__ import annotations

from typing import List

from ._redirect import load_table

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
        "Generated from `torchada/tables/torch_cuda.json` by `python -m torchada tables`; "
        "do not edit.",
        "Every other public name resolves to the same name on torch_musa.",
        "",
    ]
    for module_name, spec in load_table().items():
        target = {None: "(none)", "@original": "its own module, with overrides"}.get(
            spec["target"], spec["target"]
        )
        lines += [f"## `{module_name}` → `{target}`", ""]
        if spec.get("unsupported"):
            why, instead = spec["unsupported"]
            lines += [f"Unsupported as a whole: {why}. Instead, {instead}.", ""]
        if not spec["names"]:
            continue
        lines += ["| name | on MUSA | details |", "|---|---|---|"]
        for name, entry in sorted(spec["names"].items()):
            kind = entry["kind"]
            if kind == "renamed":
                detail = f"`{entry['to']}`" + (f" ({entry['note']})" if entry.get("note") else "")
            elif kind == "unsupported":
                detail = f"{entry['why']}; instead, {entry['instead']}"
            elif kind == "submodule":
                detail = f"`{entry['module']}`"
            else:
                detail = entry.get("note", "")
            lines.append(f"| `{name}` | {KIND_WORDS[kind]} | {detail} |")
        lines.append("")
    return "\n".join(lines)


def main(argv: List[str]) -> int:
    import os

    path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "docs", "torch_cuda_names.md")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(render_cuda_table())
    print(f"wrote {path}")
    return 0
