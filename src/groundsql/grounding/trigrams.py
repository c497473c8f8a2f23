"""Strings indexed by their character 3-grams, for fuzzy lookup among millions of names.

An entity table of a warehouse holds a million customer names; a question's word spans must be
looked up among them in milliseconds. As PostgreSQL's pg_trgm does, each string is cut into
the 3-grams of its padded form ("  acme " -> "  a", " ac", "acm", "cme", "me "), and a posting
list per 3-gram holds the strings that contain it. A lookup counts, over the postings of the
query's 3-grams only, how many each string shares with the query, and ranks strings by the
3-gram similarity shared / (query's + string's - shared). Its cost grows with the postings it
reads, not with the number of strings.

The index is built with numpy over one byte array of all strings (no Python object per
3-gram): a million names take seconds and about 20 bytes a 3-gram.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["TrigramIndex", "trigrams"]


def _padded(text: str) -> bytes:
    return f"  {text} ".encode()


def trigrams(text: str) -> set[bytes]:
    """The distinct 3-grams of a string's padded UTF-8 form (what the index stores)."""
    padded = _padded(text)
    return {padded[i:i + 3] for i in range(len(padded) - 2)}


def _code(gram: bytes) -> int:
    return (gram[0] << 16) | (gram[1] << 8) | gram[2]


def _distinct(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of an array, ascending, and where each first occurs in its sorted
    form. (np.unique's hash table takes minutes on tens of millions; a sort takes seconds.)"""
    ordered = np.sort(values)
    first = np.empty(len(ordered), dtype=bool)
    first[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    return ordered[first], np.flatnonzero(first)


class TrigramIndex:
    """Postings of 3-gram codes (24-bit integers of their bytes) in compressed sparse rows."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.size = len(texts)
        blobs = [_padded(t) for t in texts]
        lengths = np.fromiter(map(len, blobs), dtype=np.int64, count=self.size)
        data = np.frombuffer(b"".join(blobs), dtype=np.uint8).astype(np.int64)
        if self.size == 0 or len(data) < 3:
            self._codes = np.zeros(0, dtype=np.int64)
            self._offsets = np.zeros(1, dtype=np.int64)
            self._owners = np.zeros(0, dtype=np.int32)
            self._grams = np.zeros(self.size, dtype=np.int32)
            return
        codes = (data[:-2] << 16) | (data[1:-1] << 8) | data[2:]
        del data
        starts = np.cumsum(lengths) - lengths
        owner = np.repeat(np.arange(self.size, dtype=np.int64), lengths)[:-2]
        # A 3-gram starting in one string's last two bytes runs into the next string: dropped.
        inside = np.arange(len(codes), dtype=np.int64) - starts[owner] <= lengths[owner] - 3
        # One posting per (3-gram, string): a string's repeated 3-gram counts once.
        keys, _ = _distinct(codes[inside] * self.size + owner[inside])
        del codes, owner, inside
        codes, owners = keys // self.size, (keys % self.size).astype(np.int32)
        del keys
        self._codes, first = _distinct(codes)
        self._offsets = np.append(first, len(codes)).astype(np.int64)
        self._owners = owners
        self._grams = np.bincount(owners, minlength=self.size).astype(np.int32)

    @property
    def nbytes(self) -> int:
        return int(self._codes.nbytes + self._offsets.nbytes + self._owners.nbytes + self._grams.nbytes)

    def similar(self, text: str, threshold: float = 0.3, limit: int = 64) -> list[tuple[int, float]]:
        """Up to `limit` strings (by position) whose 3-gram similarity to `text` is at least
        `threshold`, most similar first.

        Candidates come from the query's rarest 3-grams, as many as fit in `_POSTINGS`
        postings: a 3-gram a third of a million names share ("ing") would cost a third of a
        million postings and tell almost nothing, while a string similar to the query shares
        some of its rare 3-grams too. The candidates' similarity is then exact: each common
        3-gram's postings (sorted) are searched for them."""
        codes = np.fromiter((_code(g) for g in trigrams(text)), dtype=np.int64)
        if not len(codes) or not len(self._codes):
            return []
        at = np.searchsorted(self._codes, codes)
        known = at < len(self._codes)
        known[known] = self._codes[at[known]] == codes[known]
        at = at[known]
        if not len(at):
            return []
        sizes = self._offsets[at + 1] - self._offsets[at]
        order = np.argsort(sizes, kind="stable")
        rare = max(1, int(np.searchsorted(np.cumsum(sizes[order]), _POSTINGS, side="right")))
        probed, rest = at[order[:rare]], at[order[rare:]]
        postings = np.concatenate([self._postings(i) for i in probed])
        if len(postings) > self.size // 8:
            counts = np.bincount(postings, minlength=self.size)
            owners = np.flatnonzero(counts)
            shared = counts[owners]
        else:
            owners, first = _distinct(postings)
            shared = np.diff(np.append(first, len(postings)))
        if len(owners) > _CANDIDATES:
            # Most rare 3-grams shared first, then the closest in length to the query.
            rank = shared * 1024 - np.minimum(np.abs(self._grams[owners] - len(codes)), 1023)
            best = np.sort(np.argpartition(-rank, _CANDIDATES - 1)[:_CANDIDATES])
            owners, shared = owners[best], shared[best]  # still ascending: searched fast below
        for i in rest:
            posting = self._postings(i)
            found = np.minimum(np.searchsorted(posting, owners), len(posting) - 1)
            shared = shared + (posting[found] == owners)
        score = shared / (len(codes) + self._grams[owners] - shared)
        keep = score >= threshold
        owners, score = owners[keep], score[keep]
        if len(owners) > limit:
            top = np.argpartition(-score, limit - 1)[:limit]
            owners, score = owners[top], score[top]
        ranked = np.lexsort((owners, -score))
        return [(int(owners[i]), float(score[i])) for i in ranked]

    def _postings(self, at: int) -> np.ndarray:
        """The strings holding the 3-gram at position `at` of the codes, ascending."""
        return self._owners[self._offsets[at]:self._offsets[at + 1]]


_POSTINGS = 60_000  # postings read to find candidates, past the rarest 3-gram's
_CANDIDATES = 1_000  # candidates (most rare 3-grams shared) whose similarity is computed
