"""Spelling: lower-case name -> the spelling to give back, a model's few names over the run's many.

Pure. The run's map holds every name of the project (44,000 at 2,000 models); each model adds its
own columns and the names its rewrite made. Copying the run's map per model cost more than
tracing the model (2,000 copies: about 2 s of a 6 s cold analysis), so a model's names sit over
it instead.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping


class Spelling(Mapping[str, str]):
    """`tops` over `base`, the last top winning; `base` is never copied.

    >>> s = Spelling({"id": "ID", "amount": "amount"}, {"id": "Id"})
    >>> s.get("id"), s.get("amount"), s.get("gone", "gone"), len(s)
    ('Id', 'amount', 'gone', 2)
    """

    __slots__ = ("_base", "_top")
    _base: Mapping[str, str]
    _top: dict[str, str]

    def __init__(self, base: Mapping[str, str], *tops: Mapping[str, str]) -> None:
        top: dict[str, str] = {}
        if isinstance(base, Spelling):  # one level, however often a model's names are added
            top.update(base._top)
            base = base._base
        for names in tops:
            top.update(names)
        self._base, self._top = base, top

    def get(self, key: str, default: str | None = None) -> str | None:  # type: ignore[override]
        found = self._top.get(key)
        if found is not None:
            return found
        return self._base.get(key) if default is None else self._base.get(key, default)

    def __getitem__(self, key: str) -> str:
        found = self._top.get(key)
        return found if found is not None else self._base[key]

    def __iter__(self) -> Iterator[str]:
        yield from self._top
        yield from (k for k in self._base if k not in self._top)

    def __len__(self) -> int:
        return len(self._top) + sum(1 for k in self._base if k not in self._top)
