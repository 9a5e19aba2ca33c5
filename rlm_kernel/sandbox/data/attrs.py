"""The attribute policy for objects of numpy, pandas and matplotlib: refused names, checked methods.

Cells reach these objects only through public (non-underscore) attributes, read by the `_getattr_` guard.
The guard sends the names listed here (`DATA_NAMES`) to `data_attribute`, which, for an object or class of
one of the data libraries, refuses the name with a one-line reason or hands out a checked wrapper:

- files, URLs and the network: writers other than to a string or an in-memory buffer, `savefig` to a path,
  numpy's `tofile`/`dump`; pickle (`to_pickle`, `dumps`); `ctypes`/`cffi`/`capsule` handles; the raw buffer
  (`ndarray.data`, a writable memoryview a cell could reinterpret); `resize(refcheck=False)` (frees memory
  other views still use);
- string evaluation (`eval`, `query`) and string names that pandas resolves to methods (`agg('sum')`,
  `apply('name')`): only names in `SAFE_FUNC_NAMES`;
- plotting backends named by string (`backend=` imports a module), Styler (Jinja templates), the canvas
  (`print_*` writers, event callbacks), `usetex` (runs LaTeX).
"""

from __future__ import annotations

import functools
import io
import string
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from rlm_kernel.sandbox.errors import LimitExceeded, refusal

__all__ = [
    "DATA_NAMES",
    "NOT_HANDLED",
    "SAFE_FUNC_NAMES",
    "check_func_spec",
    "check_savefig",
    "data_text_size",
    "plain_spec",
    "data_attribute",
    "function_taker",
    "is_data_class",
]

NOT_HANDLED: Any = object()
_TOKEN = object()
_LIBRARIES = frozenset({"numpy", "pandas", "matplotlib"})
_BUFFERS = (io.StringIO, io.BytesIO)

_IN_MEMORY = "use a string (leave the path out) or an io.StringIO/io.BytesIO buffer"
REFUSED: dict[str, str] = {
    # files and pickle
    "to_pickle": "pickle is not available in the sandbox; keep the object in a variable",
    "dumps": "pickle is not available in the sandbox; use .tolist() or .tobytes()",
    "dump": "pickle and files are not available in the sandbox; keep the array in a variable",
    "tofile": "files are not available in the sandbox; use .tobytes() or .tolist()",
    "to_excel": "files are not available in the sandbox; use to_csv() or to_html() without a path",
    "to_parquet": "files are not available in the sandbox; use to_csv() or to_json() without a path",
    "to_feather": "files are not available in the sandbox; use to_csv() or to_json() without a path",
    "to_hdf": "files are not available in the sandbox; use to_csv() or to_json() without a path",
    "to_sql": "databases are not available in the sandbox",
    "to_stata": "files are not available in the sandbox; use to_csv() without a path",
    "to_orc": "files are not available in the sandbox; use to_csv() without a path",
    "to_clipboard": "the clipboard is not available in the sandbox; use to_csv() without a path",
    "to_gbq": "the network is not available in the sandbox",
    "to_iceberg": "files are not available in the sandbox",
    # string evaluation
    "eval": "string evaluation (DataFrame.eval) is not available in the sandbox; write the expression in "
    "Python, e.g. df['c'] = df['a'] + df['b']",
    "query": "string evaluation (DataFrame.query) is not available in the sandbox; filter with a mask, "
    "e.g. df[df['a'] > 1]",
    # native handles and raw buffers
    "ctypes": "ctypes handles are not available in the sandbox",
    "cffi": "cffi handles are not available in the sandbox",
    "capsule": "native capsules are not available in the sandbox",
    "data": "the raw buffer of an array is not available in the sandbox; use .tobytes() or .tolist()",
    # templates, canvases, external programs
    "style": "DataFrame.style (Jinja templates) is not available in the sandbox; use to_html() or display df",
    "canvas": "the figure's canvas is not available in the sandbox; use fig.savefig(io.BytesIO()) or "
    "plt.show()",
    "set_canvas": "the figure's canvas is not available in the sandbox",
    "set_usetex": "usetex runs LaTeX, an external program; use matplotlib's built-in $math$ text instead",
    "mpl_connect": "event callbacks are not available in the sandbox",
    "add_callback": "property callbacks are not available in the sandbox",
    "properties": "properties() hands out the canvas among the rest; read the ones you need with get_*()",
    "to_latex": "to_latex uses Styler's Jinja templates, not available in the sandbox; use to_string()",
    "to_xml": "to_xml can run XSLT stylesheets that read files; use to_json() or to_csv() without a path",
}

# Names pandas may resolve to methods or numpy functions when given as strings (agg('sum'), apply('abs'),
# transform('cumsum'), pivot_table(aggfunc='mean')): reductions and transforms that take no code.
SAFE_FUNC_NAMES = frozenset(
    (
        "sum mean median min max count size nunique std var sem prod product first last any all idxmin "
        "idxmax cumsum cumprod cummin cummax cumcount rank abs skew kurt kurtosis mode quantile describe "
        "nlargest nsmallest unique value_counts diff pct_change shift fillna ffill bfill ohlc ngroup "
        "round clip head tail corr cov sqrt exp log log10 log2 floor ceil sort_values sort_index "
        "dropna notna isna notnull isnull len list tuple set sorted nanmean nanmedian nansum nanmax "
        "nanmin nanstd nanvar"
    ).split()
)

_classes: weakref.WeakKeyDictionary[type, bool] = weakref.WeakKeyDictionary()


def is_data_class(cls: Any) -> bool:
    """True for classes of numpy, pandas or matplotlib (anything in the MRO), and their stand-ins."""
    try:
        return _classes[cls]
    except (KeyError, TypeError):
        pass
    found = any(
        str(getattr(base, "__module__", "") or "").partition(".")[0] in _LIBRARIES
        for base in getattr(cls, "__mro__", ())
    )
    try:
        _classes[cls] = found
    except TypeError:
        pass
    return found


def plain_spec(spec: Any, what: str, *, depth: int = 0) -> Any:
    """An exact copy of an agg/apply specification — str, list, tuple and dict, built by reading the cell's
    object once (`list(keys())`, then each item) — so that the check and pandas see the same thing: a str
    subclass whose `__str__` says 'sum', or a dict whose `values()` differs from its items, cannot show the
    check one specification and pandas another. Other objects (functions, column labels) are kept."""
    if depth > 5:
        raise refusal(f"{what}: the function specification is nested too deeply")
    if isinstance(spec, str):
        return str.__str__(spec)
    if isinstance(spec, Mapping):
        return {key: plain_spec(spec[key], what, depth=depth + 1) for key in list(spec.keys())}
    if isinstance(spec, (list, tuple)):
        items = [plain_spec(value, what, depth=depth + 1) for value in list(spec)]
        return tuple(items) if isinstance(spec, tuple) else items
    return spec


def data_text_size(obj: Any) -> int:
    """Characters of text held by a numpy array or pandas object (0 for numbers): what `obj * n` repeats
    element-wise for string elements. Fixed-width dtypes are counted from the item size, object and
    variable-width ones element by element."""
    import numpy as np

    values = obj.to_numpy() if hasattr(obj, "to_numpy") and not isinstance(obj, np.ndarray) else obj
    if not isinstance(values, np.ndarray):
        return 0
    kind = values.dtype.kind
    if kind == "U":
        return values.size * (values.dtype.itemsize // 4)
    if kind == "S":
        return values.size * values.dtype.itemsize
    if kind in "OT":
        return sum(len(v) for v in values.flat if isinstance(v, (str, bytes)))
    return 0


def check_func_spec(spec: Any, what: str, *, depth: int = 0) -> None:
    """Refuse string function names outside SAFE_FUNC_NAMES anywhere in an agg/apply specification (check
    the `plain_spec` copy and pass that copy on)."""
    if depth > 5:
        raise refusal(f"{what}: the function specification is nested too deeply")
    if isinstance(spec, str):
        if str.__str__(spec) not in SAFE_FUNC_NAMES:
            raise refusal(
                f"{what} with the name {str.__str__(spec)[:40]!r} is not available in the sandbox; pass a "
                f"function or one of: {', '.join(sorted(SAFE_FUNC_NAMES)[:12])}, ..."
            )
        return
    if type(spec) is dict:
        for value in spec.values():
            check_func_spec(value, what, depth=depth + 1)
    elif type(spec) in (list, tuple):
        for value in spec:
            check_func_spec(value, what, depth=depth + 1)
    elif isinstance(spec, (Mapping, list, tuple)):
        check_func_spec(plain_spec(spec, what, depth=depth), what, depth=depth)


def _check_named(kwargs: dict[str, Any], what: str) -> None:
    """Named aggregation: `agg(total=('col', 'sum'))` — the second item is a function spec (`kwargs` holds
    plain copies already: see `function_taker`)."""
    for value in kwargs.values():
        if type(value) is tuple and len(value) == 2:
            check_func_spec(value[1], what)


_FUNC_PARAMS = ("func", "arg", "aggfunc")
_ENGINES = frozenset({None, "python", "cython"})


def function_taker(
    name: str, method: Callable[..., Any], *, position: int | None = 0, named: bool = False
) -> Callable[..., Any]:
    """`method` checked so that string function names (positional argument `position`, or func=/arg=/
    aggfunc=, or named aggregations) are in SAFE_FUNC_NAMES, and no engine= other than pandas' own."""

    @functools.wraps(method)
    def checked(*args: Any, **kwargs: Any) -> Any:
        what = f"{name}()"
        # one plain copy of every function specification, checked and then passed on (nothing read twice)
        if position is not None and len(args) > position:
            args = (*args[:position], plain_spec(args[position], what), *args[position + 1 :])
        for key, value in list(kwargs.items()):
            if key in _FUNC_PARAMS or (named and isinstance(value, tuple)):
                kwargs[key] = plain_spec(value, what)
        if position is not None and len(args) > position:
            check_func_spec(args[position], what)
        for param in _FUNC_PARAMS:
            if param in kwargs:
                check_func_spec(kwargs[param], what)
        if named:
            _check_named(kwargs, what)
        engine = kwargs.get("engine")
        if not (engine is None or (type(engine) is str and engine in _ENGINES)):
            raise refusal(
                f"{what} with engine= other than 'python' is not available in the sandbox; leave it out"
            )
        return method(*args, **kwargs)

    return checked


def check_format_string(value: Any, what: str) -> None:
    """Refuse a str.format template whose fields read attributes or items (`'{x.__class__}'`): the libraries
    format with the real str.format, outside the sandbox's attribute guard."""
    if not isinstance(value, str):
        return
    if type(value) is not str:
        raise refusal(f"{what}: pass the format as a plain str (str subclasses format themselves)")
    try:
        fields = [field for _, field, _, _ in string.Formatter().parse(value) if field]
    except ValueError:
        return  # not a valid template: the library reports it
    if any("." in field or "[" in field for field in fields):
        raise refusal(
            f"{what}: format fields that read attributes or items ({{x.attr}}, {{x[0]}}) are not available; "
            "use plain fields such as '{x:.2f}' or pass a function"
        )


def _formats(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def checked(*args: Any, **kwargs: Any) -> Any:
        for value in (*args, *kwargs.values()):
            check_format_string(value, f"{name}()")
        return method(*args, **kwargs)

    return checked


def _writer(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def checked(*args: Any, **kwargs: Any) -> Any:
        target = args[0] if args else None
        for param in ("path_or_buf", "buf", "path", "path_or_buffer"):
            if target is None and param in kwargs:
                target = kwargs[param]
        if target is not None and type(target) not in _BUFFERS:
            raise refusal(f".{name}() to a path or file is not available in the sandbox; {_IN_MEMORY}")
        for key in ("float_format", "formatters"):
            check_format_string(kwargs.get(key), f"{name}({key}=...)")
        if kwargs.get("storage_options") is not None:
            raise refusal(f".{name}() with storage_options reaches the network; it is not available")
        return method(*args, **kwargs)

    return checked


def _no_backend(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def checked(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("backend") is not None:
            raise refusal(
                f".{name}() with backend= imports a module by name; the sandbox plots with matplotlib only"
            )
        return method(*args, **kwargs)

    return checked


SAVE_FORMATS = frozenset({"png", "svg", "pdf", "jpg", "jpeg"})
# savefig's keywords that only shape the image; `backend=` ('module://name' imports a module), and any other
# keyword (passed on to the canvas's print_* writer) are refused.
SAVEFIG_KEYWORDS = frozenset(
    "format dpi transparent metadata bbox_inches pad_inches facecolor edgecolor orientation "
    "bbox_extra_artists".split()
)


def check_savefig(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """savefig only into an io.BytesIO/io.StringIO buffer, in a format rendered in-process (the `format=`
    given or rcParams['savefig.format']), with keywords that name no module or file."""
    if len(args) > 1:
        raise refusal("savefig takes the buffer as its only positional argument; pass the rest by name")
    target = args[0] if args else kwargs.get("fname")
    if type(target) not in _BUFFERS:
        raise refusal(
            "savefig to a path or file is not available in the sandbox; use plt.show() (the figure is shown "
            "inline) or fig.savefig(io.BytesIO(), format='png')"
        )
    unknown = sorted(set(kwargs) - SAVEFIG_KEYWORDS - {"fname"})
    if unknown:
        raise refusal(
            f"savefig({', '.join(f'{k}=' for k in unknown)}) is not available in the sandbox (backend= "
            f"imports a module by name); available keywords: {', '.join(sorted(SAVEFIG_KEYWORDS))}"
        )
    fmt = kwargs.get("format")
    if fmt is None:
        import matplotlib

        fmt = matplotlib.rcParams["savefig.format"]
    if type(fmt) is not str or fmt.lower() not in SAVE_FORMATS:
        raise refusal(
            f"savefig format {fmt!r} is not available; use one of {', '.join(sorted(SAVE_FORMATS))}"
        )


def _savefig(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def checked(*args: Any, **kwargs: Any) -> Any:
        check_savefig(args, kwargs)
        fmt = kwargs.get("format")
        if fmt is None:
            import matplotlib

            kwargs["format"] = matplotlib.rcParams["savefig.format"]  # the one checked
        return method(*args, **kwargs)

    return checked


def _resize(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def checked(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("refcheck", True) is not True:
            raise refusal(
                "resize(refcheck=False) frees memory other views still use; use np.resize(a, shape)"
            )
        return method(*args, **kwargs)

    return checked


class PlotAccessor:
    """`df.plot` / `s.plot` for cells: pandas' accessor without `backend=` (which imports a module)."""

    __slots__ = ("_rlm_accessor",)

    def __init__(self, accessor: Any, *, token: object = None) -> None:
        if token is not _TOKEN:  # `type(df.plot)(obj)` would read obj's attributes past the guard's checks
            raise refusal("the plot accessor cannot be created from a cell; use df.plot")
        object.__setattr__(self, "_rlm_accessor", accessor)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _no_backend("plot", self._rlm_accessor)(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return _no_backend(f"plot.{name}", getattr(self._rlm_accessor, name))

    def __setattr__(self, name: str, value: Any) -> None:
        raise refusal("the plot accessor is read-only")

    def __dir__(self) -> list[str]:
        return [n for n in dir(self._rlm_accessor) if not n.startswith("_")]

    def __repr__(self) -> str:
        return "<pandas plot accessor (rlm sandbox)>"


_STR_GROWING = frozenset({"repeat", "pad", "center", "ljust", "rjust", "zfill", "join", "cat", "replace"})


def _str_check(obj: Any, method: str, args: tuple[Any, ...], kwargs: dict[str, Any], cap: int) -> None:
    """Refuse a pandas `.str` method whose result would hold more than `cap` characters in all."""
    if not cap:
        return
    import pandas as pd

    lengths = pd.Series(obj.str.len())  # an Index's lengths are an Index (no .sum)
    total = int(lengths.fillna(0).sum())
    count = len(obj)
    first = args[0] if args else None
    if method == "repeat":
        repeats = kwargs.get("repeats", first)
        most = max((int(r) for r in repeats), default=0) if isinstance(repeats, (list, tuple)) else repeats
        size = total * int(most) if hasattr(type(most), "__index__") else 0
    elif method in ("pad", "center", "ljust", "rjust", "zfill"):
        width = kwargs.get("width", first)
        size = count * int(width) if hasattr(type(width), "__index__") else 0
    elif method == "join":
        sep = kwargs.get("sep", first)
        size = total * (1 + len(sep)) if isinstance(sep, str) else 0
    elif method == "cat":
        sep = kwargs.get("sep")
        size = total + count * len(sep) if isinstance(sep, str) else 0
    else:  # replace(pat, repl): every position may match (a regex matching the empty string)
        repl = kwargs.get("repl", args[1] if len(args) > 1 else None)
        size = (total + count) * (1 + len(repl)) if isinstance(repl, str) and len(repl) > 1 else 0
    if size > cap:
        raise LimitExceeded(
            f".str.{method}() would build about {size} characters, over the limit of {cap} "
            "(RLM_MAX_SEQUENCE); work on fewer rows or a smaller width"
        )


class StrAccessor:
    """`series.str` for cells: pandas' string methods, with those that grow the text checked first."""

    __slots__ = ("_rlm_accessor", "_rlm_obj", "_rlm_cap")

    def __init__(self, accessor: Any, obj: Any, cap: int, *, token: object = None) -> None:
        if token is not _TOKEN:
            raise refusal("the str accessor cannot be created from a cell; use series.str")
        object.__setattr__(self, "_rlm_accessor", accessor)
        object.__setattr__(self, "_rlm_obj", obj)
        object.__setattr__(self, "_rlm_cap", cap)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        value = getattr(self._rlm_accessor, name)
        if name not in _STR_GROWING or not callable(value):
            return value
        obj, cap = self._rlm_obj, self._rlm_cap

        @functools.wraps(value)
        def checked(*args: Any, **kwargs: Any) -> Any:
            _str_check(obj, name, args, kwargs, cap)
            return value(*args, **kwargs)

        return checked

    def __getitem__(self, key: Any) -> Any:
        return self._rlm_accessor[key]

    def __setattr__(self, name: str, value: Any) -> None:
        raise refusal("the str accessor is read-only")

    def __dir__(self) -> list[str]:
        return [n for n in dir(self._rlm_accessor) if not n.startswith("_")]

    def __repr__(self) -> str:
        return "<pandas str accessor (rlm sandbox)>"


def _plot(name: str, value: Any) -> Any:
    if callable(value) and type(value).__name__ == "PlotAccessor":
        return PlotAccessor(value, token=_TOKEN)
    return _no_backend(name, value) if callable(value) else value


_WRITERS = ("to_csv", "to_json", "to_html", "to_string", "to_markdown")
_WRAPPERS: dict[str, Callable[[str, Any], Any]] = {
    **dict.fromkeys(_WRITERS, _writer),
    "apply": function_taker,
    "transform": function_taker,
    "agg": functools.partial(function_taker, named=True),
    "aggregate": functools.partial(function_taker, named=True),
    "pivot_table": functools.partial(function_taker, position=3),
    "savefig": _savefig,
    "resize": _resize,
    "hist": _no_backend,
    "boxplot": _no_backend,
    "plot": _plot,
    **dict.fromkeys(
        ("set_major_formatter", "set_minor_formatter", "bar_label", "clabel", "colorbar"), _formats
    ),
}

DATA_NAMES = frozenset(REFUSED) | frozenset(_WRAPPERS) | {"info", "str"}


def _info(method: Callable[..., Any], write: Callable[[str], None]) -> Callable[..., Any]:
    """`df.info()` prints to sys.stdout directly: send it through the cell's capped output instead."""

    @functools.wraps(method)
    def checked(*args: Any, **kwargs: Any) -> Any:
        if args or kwargs.get("buf") is not None:
            target = args[0] if args else kwargs["buf"]
            if type(target) not in _BUFFERS:
                raise refusal(f".info(buf=...) is not available in the sandbox; {_IN_MEMORY}")
            return method(*args, **kwargs)
        buffer = io.StringIO()
        method(buf=buffer, **kwargs)
        write(buffer.getvalue())
        return None

    return checked


def data_attribute(
    obj: Any, name: str, write: Callable[[str], None] | None = None, max_sequence: int = 0
) -> Any:
    """For an object (or class) of the data libraries: refuse `name`, or return its checked value.

    Returns NOT_HANDLED for every other object, so the guard goes on as usual.
    """
    cls = obj if isinstance(obj, type) else type(obj)
    if not is_data_class(cls):
        return NOT_HANDLED
    reason = REFUSED.get(name)
    if reason is not None:
        if name == "data" and not _is_array_like(cls):
            return NOT_HANDLED  # pandas' `.data` names nothing dangerous (there is none), matplotlib's lines'
        raise refusal(reason)
    value = getattr(obj, name)
    if isinstance(obj, type) and callable(value):
        raise refusal(
            f"{cls.__name__}.{name} is not available through the class in the sandbox; call it on an object"
        )
    if name == "info" and write is not None and callable(value):
        return _info(value, write)
    if name == "str" and not isinstance(obj, type) and type(value).__name__ == "StringMethods":
        return StrAccessor(value, obj, max_sequence, token=_TOKEN)
    wrap = _WRAPPERS.get(name)
    if wrap is None or not callable(value):
        return value
    return wrap(name, value)


def _is_array_like(cls: type) -> bool:
    return any(
        str(getattr(base, "__module__", "")).partition(".")[0] == "numpy"
        for base in getattr(cls, "__mro__", ())
    )
