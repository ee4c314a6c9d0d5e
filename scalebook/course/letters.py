"""Characters a reader cannot see, which must never pass as part of a name or a gradebook's cell.

Two kinds: Unicode's default-ignorable code points (the property Default_Ignorable_Code_Point of
DerivedCoreProperties.txt, https://www.unicode.org/reports/tr44/#Default_Ignorable_Code_Point: soft hyphen,
zero-width spaces and joiners, bidirectional marks, variation selectors, tags, the Hangul fillers ...), which a
renderer shows as nothing; and the blank letters and symbols a font draws as empty space without being a space
(U+2800 BRAILLE PATTERN BLANK). Some are letters (U+3164 HANGUL FILLER is category Lo), so a test by category
alone lets them through: `dup` and `dup` followed by a filler would look like one name and be two.
"""

from __future__ import annotations

__all__ = ["INVISIBLE", "invisible"]

# Inclusive code-point ranges: Default_Ignorable_Code_Point (Unicode 15.1), then the visibly blank U+2800.
INVISIBLE = ((0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
             (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
             (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
             (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF), (0x2800, 0x2800))


def invisible(ch: str) -> bool:
    """Whether the one character `ch` shows as nothing, or as a blank that is not a space (see the module)."""
    code = ord(ch)
    return any(low <= code <= high for low, high in INVISIBLE)
