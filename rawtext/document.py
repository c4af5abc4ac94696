"""The structure raw text decodes to: Document → Paragraph → Sentence → Token → words.

Every token knows its character span ``[start, end)`` in the document's text exactly as given
(never normalized), so ``document.text[token.start:token.end] == token.form``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Token:
    """One surface token and its syntactic words.

    Attributes:
        start: index of its first character in the document's text.
        end: one past its last character.
        form: ``text[start:end]``; may hold whitespace (Vietnamese tokens do).
        words: its syntactic words: ``(form,)`` for a single-word token, two or more for a
            multi-word token (French ``du`` → ``("de", "le")``).
    """

    start: int
    end: int
    form: str
    words: tuple[str, ...]

    @property
    def is_mwt(self) -> bool:
        """True for a multi-word token (written as a range line and its word lines)."""
        return len(self.words) > 1


@dataclass(frozen=True, slots=True)
class Sentence:
    """A non-empty run of tokens, in text order."""

    tokens: tuple[Token, ...]

    @property
    def start(self) -> int:
        """Index of the sentence's first character (its first token's start)."""
        return self.tokens[0].start

    @property
    def end(self) -> int:
        """One past the sentence's last character (its last token's end)."""
        return self.tokens[-1].end


@dataclass(frozen=True, slots=True)
class Paragraph:
    """A non-empty run of sentences between blank lines."""

    sentences: tuple[Sentence, ...]


@dataclass(frozen=True, slots=True)
class Document:
    """A text and its paragraphs; no paragraph for an empty or whitespace-only text."""

    text: str
    paragraphs: tuple[Paragraph, ...]

    def sentences(self) -> Iterator[Sentence]:
        """Every sentence of every paragraph, in order."""
        for paragraph in self.paragraphs:
            yield from paragraph.sentences

    def tokens(self) -> Iterator[Token]:
        """Every token of every sentence, in order."""
        for sentence in self.sentences():
            yield from sentence.tokens
