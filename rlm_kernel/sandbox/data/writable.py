"""Which objects of the data libraries cells may write into: their classes, and the attributes each may set.

`DATA_WRITABLE` (item writes: `df['c'] = ...`, `a[mask] = 0`) is filled once per process by `loader.load`
when numpy and pandas are imported (the classes exist only then, and are the same for every kernel session);
`DATA_ATTR_WRITES` maps a class name to the attributes `_write_attr_` lets a cell set (`df.columns = [...]`).
The guards (guards.py) read both.
"""

from __future__ import annotations

__all__ = ["DATA_ATTR_WRITES", "DATA_WRITABLE"]

DATA_WRITABLE: set[type] = set()
DATA_ATTR_WRITES: dict[str, frozenset[str]] = {
    "DataFrame": frozenset({"columns", "index", "attrs"}),
    "Series": frozenset({"name", "index", "attrs"}),
    "Index": frozenset({"name", "names"}),
    "MultiIndex": frozenset({"names"}),
    "ndarray": frozenset({"shape"}),
}
