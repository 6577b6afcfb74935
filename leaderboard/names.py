"""Rules for names people choose and others read: usernames, model names, file names.

- :func:`invisible_character` finds what must never be in a name: control characters (NUL included), bidi controls
  (U+202A–202E, U+2066–2069, U+200E/F, U+061C), zero-width characters (U+200B–200D, U+2060, U+FEFF) and every other
  format, separator or unassigned code point, which can make a name read differently from what it is;
- :func:`username_key` is what two usernames must not share: NFKC, case-folded, with common look-alikes (Cyrillic
  and Greek letters that look Latin, 0/o, 1/l/i, rn/m, vv/w) mapped to one letter. The accounts app stores it with a
  unique constraint, so "Ada", "ADA", "Аda" (Cyrillic А) and "ad\u0430" are one name.
"""

from __future__ import annotations

import unicodedata

# Categories that never belong in a name: Cc control, Cf format (bidi, zero-width, BOM), Cs surrogate, Co private
# use, Cn unassigned, Zl/Zp line and paragraph separators.
_REFUSED_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}


def invisible_character(text: str, *, allow: str = "") -> str | None:
    """A description of the first character of ``text`` that must not be in a name (``allow``: characters of those
    categories that this field permits, such as a newline in free text), or None."""
    for position, char in enumerate(text):
        if char in allow:
            continue
        if unicodedata.category(char) in _REFUSED_CATEGORIES:
            name = unicodedata.name(char, "") or ("NUL" if char == "\x00" else "a control character")
            return f"U+{ord(char):04X} ({name}) at position {position + 1}"
    return None


# Look-alikes of Latin letters (after NFKC and case folding), and Latin pairs read as one letter.
_CONFUSABLES = str.maketrans(
    {
        # Cyrillic
        "а": "a",
        "в": "b",
        "е": "e",
        "ё": "e",
        "һ": "h",
        "і": "i",
        "ї": "i",
        "ј": "j",
        "к": "k",
        "ӏ": "l",
        "м": "m",
        "н": "h",
        "о": "o",
        "р": "p",
        "с": "c",
        "т": "t",
        "у": "y",
        "х": "x",
        "ѕ": "s",
        "ԁ": "d",
        "ԛ": "q",
        "ԝ": "w",
        "ь": "b",
        "г": "r",
        "п": "n",
        "ц": "u",
        # Greek
        "α": "a",
        "β": "b",
        "γ": "y",
        "ε": "e",
        "η": "n",
        "ι": "i",
        "κ": "k",
        "μ": "u",
        "ν": "v",
        "ο": "o",
        "ρ": "p",
        "τ": "t",
        "υ": "u",
        "χ": "x",
        "ω": "w",
        "ϲ": "c",
        "ϳ": "j",
        "ζ": "z",
        # Latin and digits that read alike
        "0": "o",
        "1": "l",
        "i": "l",
        "|": "l",
        "5": "s",
        "ı": "l",
        "ɑ": "a",
        "ɡ": "g",
    }
)


def username_key(username: str) -> str:
    """The key two usernames must not share (see the module's doc)."""
    folded = unicodedata.normalize("NFKC", username).casefold()
    folded = unicodedata.normalize("NFKC", folded)  # case folding can undo NFKC (e.g. ß -> ss is fine, ǅ is not)
    stripped = "".join(c for c in unicodedata.normalize("NFKD", folded) if not unicodedata.combining(c))
    skeleton = stripped.translate(_CONFUSABLES)
    return skeleton.replace("rn", "m").replace("vv", "w")
