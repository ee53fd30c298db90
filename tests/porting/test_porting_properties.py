"""Property tests: idempotency and non-interference on random identifier soups."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchada.porting import load_rules, port_source

RULES = load_rules()
IDENT_KEYS = sorted(
    {r.cuda.rsplit("::", 1)[-1] for r in RULES.rules if r.kind not in ("header", "arch-threshold")}
)
HEADER_KEYS = sorted(RULES.headers)

# Pieces a hostile soup is made of: rule keys, near misses, the contexts that change meaning,
# and every lexical construct the tokenizer must get right.
KEY_SET = set(IDENT_KEYS)
near_miss = (
    st.sampled_from(IDENT_KEYS)
    .flatmap(
        lambda k: st.sampled_from(
            [k + "X", "x" + k, "_" + k, k + "_", k + "2", k.upper(), k.lower()]
        )
    )
    .filter(lambda name: name not in KEY_SET)
)
# fmt: off
PUNCT = [
    "__CUDA_ARCH__", "__MUSA_ARCH__", "at", "c10", "thrust", "cutlass", "arch", "::", ".", "->",
    "(", ")", ",", ";", "{", "}", "&&", "||", "!", "#if", "#ifdef", "#elif", "defined", ">=",
    "<=", "==", "!=", "<", ">", "<<", "+", "/", "800", "750", "900", "1000", "0x1F", "1'000",
    "'a'", "'\\''", "'\"'", '"cudaMalloc"', '"a\\"b"', 'R"(x)"', 'R"d(cudaFree)d"',
    'u8R"(y)"', "// cudaFree", "/* cudaMalloc */", "/*", "*/", "\\", "TORCH_LIBRARY_IMPL",
    "STABLE_TORCH_LIBRARY_IMPL", "CUDA", "cuda", "is_cuda", "'", '"', "R", "u8", "L", "#include",
    "__has_include", "CUDA_VERSION",
]
# fmt: on
token = st.one_of(
    st.sampled_from(IDENT_KEYS),
    near_miss,
    st.sampled_from(PUNCT),
    st.sampled_from(HEADER_KEYS).map(lambda h: f"#include <{h}>"),
    st.sampled_from(["x.cuh", "y.cu", "cuda.h"]).map(lambda h: f'#include "{h}"'),
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True),
)
separator = st.sampled_from(["", " ", "  ", "\n", "\t", " \\\n", "\r\n"])
soup = st.lists(st.tuples(token, separator), max_size=60).map(
    lambda parts: "".join(t + s for t, s in parts)
)

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(soup)
def test_idempotent_on_soups(text: str) -> None:
    once, _ = port_source(text)
    twice, report = port_source(once)
    assert twice == once
    assert report.translated == {}


@SETTINGS
@given(soup)
def test_idempotent_with_comment_rewriting(text: str) -> None:
    once, _ = port_source(text, rewrite_comments=True)
    assert port_source(once, rewrite_comments=True)[0] == once


@SETTINGS
@given(st.lists(st.tuples(near_miss, st.sampled_from([" ", ";", "\n", "(", ")"])), max_size=40))
def test_near_misses_never_rewritten(parts) -> None:
    text = "".join(t + s for t, s in parts)
    assert port_source(text)[0] == text


@SETTINGS
@given(soup)
def test_line_count_preserved(text: str) -> None:
    # Rewrites never add or drop lines, so compiler diagnostics keep pointing at the right place.
    assert port_source(text)[0].count("\n") == text.count("\n")


@SETTINGS
@given(st.text(max_size=200))
def test_arbitrary_text_never_crashes(text: str) -> None:
    once, report = port_source(text)
    assert port_source(once)[0] == once
    assert report.status in ("ported", "unchanged")


LONE = {"/*", "*/", "\\", "'", '"', "R", "u8", "L"}
balanced_soup = st.lists(
    st.tuples(token.filter(lambda t: t not in LONE), separator), max_size=60
).map(lambda parts: "".join(t + s for t, s in parts))


@SETTINGS
@given(balanced_soup)
def test_literals_and_comments_survive(text: str) -> None:
    # After any well-formed code, a string literal and a block comment come out verbatim.
    tail = '\n"cudaMalloc(\\"x\\")"; /* cudaFree */ cudaFree(p);\n'
    out = port_source(text + tail)[0]
    assert out.endswith('\n"cudaMalloc(\\"x\\")"; /* cudaFree */ musaFree(p);\n')
