"""The facades of numpy (with numpy.linalg, numpy.random) and pandas; `build` adds matplotlib's (plotting.py).

Chosen functions and classes only; those that take paths, evaluate strings, pickle, reach native handles,
name modules or set process-wide callbacks are left out or served as checked wrappers (see attrs.py for the
objects they return).
"""

from __future__ import annotations

import functools
import io
import math
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import rlm_kernel.sandbox.data.figures as figures
from rlm_kernel.sandbox.data.attrs import function_taker
from rlm_kernel.sandbox.data.plotting import FILES_REASON, matplotlib_facades, plain_settings
from rlm_kernel.sandbox.data.standins import ndarray_standin
from rlm_kernel.sandbox.errors import LimitExceeded, refusal
from rlm_kernel.sandbox.facade import is_cell_function, make_facade, refused_entries

if TYPE_CHECKING:
    from rlm_kernel.sandbox.session import SandboxSession

__all__ = ["build"]

# numpy names never served (files, pickle, native code, docs machinery, frame-reading helpers, test runner).
_NUMPY_LEFT_OUT = frozenset(
    (
        "load save savez savez_compressed savetxt loadtxt genfromtxt fromfile fromregex fromstring memmap "
        "ctypeslib lib testing f2py distutils show_config show_runtime info source lookfor get_include "
        "add_newdoc add_docstring add_newdoc_ufunc seterrcall geterrcall bmat asmatrix matrix recarray "
        "chararray test from_dlpack char rec ma emath polynomial fft dtypes exceptions typing core "
        "DataSource setbufsize getbufsize broadcast"
    ).split()
)
_PRINT_OPTIONS = frozenset(
    "precision threshold edgeitems linewidth suppress nanstr infstr sign floatmode legacy".split()
)
_ERR_MODES = frozenset({None, "ignore", "warn", "raise", "print"})

_PANDAS_NAMES = (
    "DataFrame Series Index MultiIndex RangeIndex DatetimeIndex TimedeltaIndex PeriodIndex CategoricalIndex "
    "IntervalIndex Categorical CategoricalDtype Timestamp Timedelta Period Interval NaT NA Grouper NamedAgg "
    "IndexSlice DateOffset StringDtype Int64Dtype Int32Dtype Float64Dtype BooleanDtype "
    "concat merge merge_asof merge_ordered crosstab cut qcut get_dummies from_dummies melt wide_to_long "
    "factorize unique isna isnull notna notnull to_datetime to_timedelta to_numeric date_range bdate_range "
    "period_range timedelta_range interval_range json_normalize array infer_freq"
)

_NUMPY_REFUSED = {
    **dict.fromkeys(
        "load save savez savez_compressed savetxt loadtxt genfromtxt fromfile fromregex memmap "
        "DataSource".split(),
        FILES_REASON,
    ),
    "ctypeslib": "hands out ctypes pointers; native code is not available in the sandbox",
    "lib": "holds numpy's internals (stride tricks, file formats); use the functions of np itself",
    "core": "holds numpy's internals; use the functions of np itself",
    "testing": "runs numpy's test machinery; it is not available in the sandbox",
    "f2py": "compiles native code; it is not available in the sandbox",
    "show_config": "reads the build configuration; it is not available in the sandbox",
    "show_runtime": "inspects the process; it is not available in the sandbox",
    "info": "reads source and documentation files; use help text in the docs instead",
    "source": "reads source files; it is not available in the sandbox",
    "seterrcall": "installs a process-wide callback; use np.errstate(all='raise') instead",
    "bmat": "reads variables from the caller's frame; use np.block instead",
    "fromstring": "is deprecated; use np.array(text.split(), dtype=float)",
}
_PANDAS_REFUSED = {
    **dict.fromkeys(
        (
            "read_pickle read_excel read_parquet read_feather read_hdf read_sql read_sql_query "
            "read_sql_table read_html read_xml read_orc read_sas read_spss read_stata read_clipboard read_gbq"
        ).split(),
        "reads files, URLs or databases, which are not available in the sandbox; pass text to "
        "pd.read_csv or pd.read_json (load files with load_context())",
    ),
    "to_pickle": "is pickle, which is not available in the sandbox",
    "eval": "evaluates strings; write the expression in Python instead",
    "api": "holds pandas' extension internals; it is not available in the sandbox",
    "io": "holds pandas' file readers and writers; use pd.read_csv/read_json on text",
    "core": "holds pandas' internals; it is not available in the sandbox",
    "plotting": "selects plotting backends by module name; use df.plot(...) or plt",
    "options": "can name modules to import (plotting.backend); use pd.set_option('display....', value)",
    "show_versions": "inspects the process and installed packages; it is not available in the sandbox",
    "testing": "is pandas' test machinery; it is not available in the sandbox",
}


def _size_check(session: SandboxSession, what: str) -> Callable[[float], None]:
    limit = session.limits.memory_mb

    def check(nbytes: float) -> None:
        if limit and nbytes > limit * 1024 * 1024:
            raise LimitExceeded(
                f"{what} would allocate {nbytes / 2**20:,.0f} MB, over the {limit} MB memory limit of a cell "
                "(RLM_MEMORY_MB)"
            )

    return check


def _shape_items(shape: Any) -> float:
    if isinstance(shape, int):
        return float(shape)
    try:
        return float(math.prod(int(n) for n in shape))
    except TypeError:
        return 0.0


def _numpy(session: SandboxSession) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    import numpy as np

    attrs: dict[str, Any] = {}
    for name in dir(np):
        if name.startswith("_") or name in _NUMPY_LEFT_OUT:
            continue
        value = getattr(np, name, None)
        if isinstance(value, types.ModuleType) or value is None:
            continue
        attrs[name] = value
    attrs["ndarray"] = ndarray_standin()
    attrs.update(refused_entries(_NUMPY_REFUSED))

    def sized(fn: Callable[..., Any], what: str) -> Callable[..., Any]:
        check = _size_check(session, f"np.{what}")

        @functools.wraps(fn)
        def creator(shape: Any, *args: Any, **kwargs: Any) -> Any:
            dtype = kwargs.get("dtype", args[0] if args and what != "full" else None)
            if what == "full" and dtype is None:
                dtype = args[1] if len(args) > 1 else None
            try:
                if what == "full" and dtype is None and (args or "fill_value" in kwargs):
                    fill = args[0] if args else kwargs["fill_value"]  # np.full(n, 'x' * 10**6): its width
                    itemsize = np.asarray(fill).dtype.itemsize
                else:
                    itemsize = np.dtype(dtype).itemsize if dtype is not None else 8
            except TypeError:
                itemsize = 8
            check(_shape_items(shape) * max(itemsize, 1))
            return fn(shape, *args, **kwargs)

        return creator

    for name in ("zeros", "ones", "empty", "full"):
        attrs[name] = sized(getattr(np, name), name)
    repeat_check = _size_check(session, "np.repeat")
    tile_check = _size_check(session, "np.tile")

    def repeat(a: Any, repeats: Any, axis: Any = None) -> Any:
        arr = np.asarray(a)
        if isinstance(repeats, int):
            repeat_check(float(arr.size) * repeats * arr.itemsize)
        return np.repeat(arr, repeats, axis=axis)

    def tile(a: Any, reps: Any) -> Any:
        arr = np.asarray(a)
        tile_check(float(arr.size) * _shape_items(reps) * arr.itemsize)
        return np.tile(arr, reps)

    def frombuffer(buffer: Any, dtype: Any = float, count: int = -1, offset: int = 0, **kwargs: Any) -> Any:
        if type(buffer) not in (bytes, bytearray):
            raise refusal(
                "np.frombuffer takes bytes or a bytearray in the sandbox (another object's memory could be "
                "reinterpreted); convert it with bytes(...) first"
            )
        return np.frombuffer(buffer, dtype=dtype, count=count, offset=offset, **kwargs)

    def cell_callable(fn: Any, what: str) -> None:
        if not is_cell_function(fn):
            raise refusal(f"{what} takes a function defined in the cell (def or lambda); wrap it in one")

    def vectorize(pyfunc: Any = None, *args: Any, **kwargs: Any) -> Any:
        if pyfunc is None:
            return lambda fn: vectorize(fn, *args, **kwargs)
        cell_callable(pyfunc, "np.vectorize")
        return np.vectorize(pyfunc, *args, **kwargs)

    def frompyfunc(func: Any, nin: int, nout: int, **kwargs: Any) -> Any:
        cell_callable(func, "np.frompyfunc")
        return np.frompyfunc(func, nin, nout, **kwargs)

    def check_print_options(kwargs: dict[str, Any], args: tuple[Any, ...]) -> None:
        if args:
            raise refusal("pass print options by name, e.g. np.set_printoptions(precision=3)")
        bad = sorted(set(kwargs) - _PRINT_OPTIONS)
        if bad:
            raise refusal(
                f"print option(s) {', '.join(bad)} are not available in the sandbox (formatters would run "
                f"outside the cell); available: {', '.join(sorted(_PRINT_OPTIONS))}"
            )

    def set_printoptions(*args: Any, **kwargs: Any) -> None:
        check_print_options(kwargs, args)
        np.set_printoptions(**kwargs)

    def printoptions(*args: Any, **kwargs: Any) -> Any:
        check_print_options(kwargs, args)
        return np.printoptions(**kwargs)

    def check_err(kwargs: dict[str, Any]) -> None:
        if "call" in kwargs or any(v not in _ERR_MODES for v in kwargs.values()):
            raise refusal("error modes 'call' and 'log' are not available; use 'ignore', 'warn', 'raise'")

    def seterr(**kwargs: Any) -> Any:
        check_err(kwargs)
        return np.seterr(**kwargs)

    def errstate(**kwargs: Any) -> Any:
        check_err(kwargs)
        return np.errstate(**kwargs)

    attrs.update(
        repeat=repeat,
        tile=tile,
        frombuffer=frombuffer,
        vectorize=vectorize,
        frompyfunc=frompyfunc,
        set_printoptions=set_printoptions,
        printoptions=printoptions,
        seterr=seterr,
        errstate=errstate,
    )
    linalg = {n: getattr(np.linalg, n) for n in dir(np.linalg) if not n.startswith("_")}
    linalg = {k: v for k, v in linalg.items() if not isinstance(v, types.ModuleType) and k != "test"}
    random_names = (
        "default_rng Generator seed rand randn randint random random_sample choice shuffle permutation "
        "normal uniform binomial poisson exponential beta gamma lognormal integers standard_normal"
    ).split()
    rand = {n: getattr(np.random, n) for n in random_names if hasattr(np.random, n)}
    return attrs, linalg, rand


def _pandas(session: SandboxSession) -> dict[str, Any]:
    import pandas as pd

    attrs = {name: getattr(pd, name) for name in _PANDAS_NAMES.split() if hasattr(pd, name)}
    attrs.update(refused_entries(_PANDAS_REFUSED))

    def reader(name: str) -> Callable[..., Any]:
        real = getattr(pd, name)

        @functools.wraps(real)
        def read(source: Any, *args: Any, **kwargs: Any) -> Any:
            if type(source) is str or (isinstance(source, str) and type(source) is not str):
                source = io.StringIO(str.__str__(source))
            elif type(source) in (bytes, bytearray):
                source = io.BytesIO(bytes(source))
            elif type(source) not in (io.StringIO, io.BytesIO):
                raise refusal(
                    f"pd.{name} reads text in the sandbox: pass the text itself or an io.StringIO; files and "
                    "URLs are not available (load files with load_context())"
                )
            for key in ("storage_options", "memory_map", "chunksize", "iterator"):
                if kwargs.get(key):
                    raise refusal(f"pd.{name}({key}=...) is not available in the sandbox")
            engine = kwargs.get("engine")
            if engine not in (None, "c", "python", "ujson"):
                raise refusal(f"pd.{name}(engine={engine!r}) is not available; use engine='c' or 'python'")
            return real(source, *args, **kwargs)

        return read

    for name in ("read_csv", "read_json", "read_table", "read_fwf"):
        attrs[name] = reader(name)
    attrs["pivot_table"] = function_taker("pd.pivot_table", pd.pivot_table, position=4)
    attrs["crosstab"] = function_taker("pd.crosstab", pd.crosstab, position=5)

    from pandas._config import config as pd_config

    # exact registered keys only: pandas reads an option name as a regex ('display.x{9}|plotting.backend'
    # matches plotting.backend, which names a module to import); a registered key is looked up as itself
    display_options = frozenset(k for k in pd_config._registered_options if k.startswith("display."))

    def option_key(key: Any) -> str:
        if type(key) is not str or key not in display_options:
            raise refusal(
                f"option {key!r} is not available; only 'display.*' options can be changed, named in full "
                "(e.g. 'display.max_rows'; no patterns)"
            )
        return key

    def option_pairs(args: tuple[Any, ...], what: str) -> tuple[Any, ...]:
        if len(args) == 1 and hasattr(args[0], "keys"):
            args = tuple(item for pair in plain_settings(args[0]).items() for item in pair)
        if len(args) % 2 or not args:
            raise TypeError(f"{what} takes pairs: {what}('display.max_rows', 100), or one dict of them")
        for key in args[::2]:
            option_key(key)
        return args

    def set_option(*args: Any) -> None:
        pd.set_option(*option_pairs(args, "set_option"))

    def option_context(*args: Any) -> Any:
        return pd.option_context(*option_pairs(args, "option_context"))

    def reset_option(key: Any) -> None:
        pd.reset_option(option_key(key))

    attrs.update(
        set_option=set_option,
        option_context=option_context,
        reset_option=reset_option,
        get_option=pd.get_option,
    )
    return attrs


def build(session: SandboxSession) -> dict[str, Any]:
    """Facades for DATA_MODULES bound to `session`; also registers the inline figure formatter."""
    np_attrs, linalg, rand = _numpy(session)
    linalg_facade = make_facade("numpy.linalg", linalg)
    random_facade = make_facade("numpy.random", rand)
    np_attrs.update(linalg=linalg_facade, random=random_facade)
    mpl, pyplot = matplotlib_facades(session)
    pyplot_facade = make_facade("matplotlib.pyplot", pyplot)
    mpl["pyplot"] = pyplot_facade
    figures.register_formatter(session)
    return {
        "numpy": make_facade("numpy", np_attrs),
        "numpy.linalg": linalg_facade,
        "numpy.random": random_facade,
        "pandas": make_facade("pandas", _pandas(session)),
        "matplotlib": make_facade("matplotlib", mpl),
        "matplotlib.pyplot": pyplot_facade,
    }
