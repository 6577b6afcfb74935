"""A solution's identity for rankings: its source with comments, blank lines, indentation width and spacing
removed, hashed. Two uploads that differ only in those are the same solution: the problem ranking shows them as one
row and pools their evaluations, so resubmitting the same code (reformatted or not) never earns a second row or a
best-of-N figure."""

from __future__ import annotations

import hashlib
import io
import re
import tokenize

_SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}


def normalised_source(text: str) -> str:
    """The source as a stream of its tokens: comments and layout gone, one token per line; the block structure
    (INDENT, DEDENT, NEWLINE) is kept, so code that means something else never collides. Source that does not
    tokenize is taken with its whitespace collapsed."""
    try:
        out = []
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type in _SKIPPED:
                continue
            if token.type == tokenize.INDENT:
                out.append("<indent>")
            elif token.type == tokenize.DEDENT:
                out.append("<dedent>")
            elif token.type == tokenize.NEWLINE:
                out.append("<newline>")
            else:
                out.append(token.string)
        return "\n".join(out)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return re.sub(r"\s+", " ", text).strip()


def source_key(text: str) -> str:
    """The sha256 of :func:`normalised_source`: ``Submission.source_key``."""
    return hashlib.sha256(normalised_source(text).encode("utf-8", "surrogateescape")).hexdigest()
