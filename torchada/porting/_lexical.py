"""The porter's lexical pieces shared by the translator and the ``__CUDA_ARCH__`` rewriter."""

from __future__ import annotations

from typing import List

# Whitespace as the compiler sees it, including backslash line continuations.
_WS = r"(?:[ \t\r\n\f\v]|\\\r?\n)*"
# Whitespace that stays on one logical line.
_HWS = r"[ \t]*(?:\\\r?\n[ \t]*)*"
_WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_SPACE_CHARS = frozenset(" \t\r\n\f\v")


def _tokens_before(text: str, pos: int, count: int) -> List[str]:
    """Up to ``count`` C tokens ending before ``pos``, nearest first (a tiny backward lexer).

    Identifiers/numbers, ``::`` and ``->`` come back whole, other punctuation one character at a
    time. Whitespace, line continuations and ``/* */`` comments between tokens are skipped.
    """
    tokens: List[str] = []
    i = pos
    while len(tokens) < count:
        while i > 0:
            c = text[i - 1]
            if c in _SPACE_CHARS:
                i -= 1
            elif c == "\\" and i < len(text) and text[i] in "\r\n":
                i -= 1
            elif c == "/" and i >= 2 and text[i - 2] == "*":
                j = text.rfind("/*", 0, i - 2)
                if j < 0:
                    break
                i = j
            else:
                break
        if i == 0:
            break
        c = text[i - 1]
        if c in _WORD_CHARS:
            j = i - 1
            while j > 0 and text[j - 1] in _WORD_CHARS:
                j -= 1
            tokens.append(text[j:i])
            i = j
        elif c == ":" and i >= 2 and text[i - 2] == ":":
            tokens.append("::")
            i -= 2
        elif c == ">" and i >= 2 and text[i - 2] == "-":
            tokens.append("->")
            i -= 2
        else:
            tokens.append(c)
            i -= 1
    return tokens
