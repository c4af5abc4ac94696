"""Test helpers for rawtext: texts with classes marked inline, and random texts with classes."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from rawtext import MWT_END, MWT_SENTENCE_END, NONE, SENTENCE_END, TOKEN_END


def labelled(marked: str) -> tuple[str, np.ndarray]:
    """Text and classes from a marked string: a mark after a character gives it that class.

    ``|`` TOKEN_END, ``#`` SENTENCE_END, ``+`` MWT_END, ``*`` MWT_SENTENCE_END.
    """
    marks = {"|": TOKEN_END, "#": SENTENCE_END, "+": MWT_END, "*": MWT_SENTENCE_END}
    text, labels = [], []
    for char in marked:
        if char in marks:
            labels[-1] = marks[char]
        else:
            text.append(char)
            labels.append(NONE)
    return "".join(text), np.array(labels, dtype=np.uint8)


# Characters that stress every rule: spaces of several kinds, line breaks, a zero-width space.
ALPHABET = st.sampled_from([*"ab .\n\r\t", "\u00a0", "\u200b", "\u3000", "é", "👍"])


@st.composite
def texts_and_labels(draw) -> tuple[str, np.ndarray]:
    text = draw(st.text(ALPHABET, max_size=40))
    labels = draw(st.lists(st.integers(0, 4), min_size=len(text), max_size=len(text)))
    return text, np.array(labels, dtype=np.uint8)
