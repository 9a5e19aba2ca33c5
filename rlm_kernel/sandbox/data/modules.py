"""The facades of numpy (with numpy.linalg, numpy.random), pandas, matplotlib and matplotlib.pyplot.

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
from rlm_kernel.sandbox.data.attrs import check_savefig, function_taker
from rlm_kernel.sandbox.data.standins import ndarray_standin
from rlm_kernel.sandbox.errors import LimitExceeded, refusal
from rlm_kernel.sandbox.facade import Refused, is_cell_function, make_facade

if TYPE_CHECKING:
    from rlm_kernel.sandbox.session import SandboxSession

__all__ = ["build", "RcParamsView"]

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

_PYPLOT_NAMES = (
    "figure subplots subplot subplot_mosaic gca gcf sca close clf cla plot bar barh hist hist2d scatter pie "
    "boxplot violinplot errorbar fill_between fill_betweenx step stem stackplot imshow matshow pcolormesh "
    "contour contourf colorbar axhline axvline axhspan axvspan hlines vlines annotate text title suptitle "
    "xlabel ylabel xlim ylim xscale yscale xticks yticks legend grid tight_layout twinx twiny "
    "subplots_adjust figtext loglog semilogx semilogy axis margins get_fignums fignum_exists figlegend "
    "supxlabel supylabel table quiver streamplot hexbin eventplot ecdf bar_label minorticks_on "
    "minorticks_off tick_params ticklabel_format locator_params autoscale box colormaps"
)
# rcParams keys a cell may set: looks only. Everything else names files, programs, fonts, backends or code
# (`figure.hooks` imports "module:function" and calls it with each new figure) and stays read-only.
_RC_SETTABLE_PREFIXES = (
    "axes.",
    "lines.",
    "patch.",
    "xtick.",
    "ytick.",
    "grid.",
    "legend.",
    "hist.",
    "boxplot.",
    "scatter.",
    "errorbar.",
    "image.",
    "contour.",
    "markers.",
    "hatch.",
    "polaraxes.",
    "figure.subplot.",
    "figure.constrained_layout.",
)
_RC_SETTABLE = frozenset(
    (
        "figure.figsize figure.dpi figure.facecolor figure.edgecolor figure.titlesize figure.titleweight "
        "figure.labelsize figure.labelweight figure.autolayout figure.frameon figure.max_open_warning "
        "font.size font.weight font.style font.stretch font.variant text.color text.antialiased "
        "savefig.dpi savefig.format savefig.bbox savefig.pad_inches savefig.facecolor savefig.edgecolor "
        "savefig.transparent date.autoformatter.year date.autoformatter.month date.autoformatter.day"
    ).split()
)
_RC_REFUSED_PARTS = ("path", "file", "dir", "backend", "usetex", "preamble", "writer", "hook", "fname")


def rc_settable(key: str) -> bool:
    """True for rcParams keys that only change how figures look."""
    if any(part in key for part in _RC_REFUSED_PARTS):
        return False
    return key in _RC_SETTABLE or key.startswith(_RC_SETTABLE_PREFIXES)


_FILES = "reads or writes files, which are not available in the sandbox (load files with load_context())"
_NUMPY_REFUSED = {
    **dict.fromkeys(
        "load save savez savez_compressed savetxt loadtxt genfromtxt fromfile fromregex memmap "
        "DataSource".split(),
        _FILES,
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
_PYPLOT_REFUSED = {
    "imread": _FILES,
    "imsave": _FILES,
    "get_current_fig_manager": "hands out the figure manager; use plt.show()",
    "connect": "installs event callbacks; they are not available in the sandbox",
    "xkcd": "changes fonts process-wide; it is not available in the sandbox",
    "install_repl_displayhook": "changes the kernel's display hook; it is not available in the sandbox",
    "get_backend": "the backend is always Agg in the sandbox",
}


def _refused(entries: dict[str, str]) -> dict[str, Any]:
    return {name: Refused(reason) for name, reason in entries.items()}


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
    attrs.update(_refused(_NUMPY_REFUSED))

    def sized(fn: Callable[..., Any], what: str) -> Callable[..., Any]:
        check = _size_check(session, f"np.{what}")

        @functools.wraps(fn)
        def creator(shape: Any, *args: Any, **kwargs: Any) -> Any:
            dtype = kwargs.get("dtype", args[0] if args and what != "full" else None)
            try:
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
    attrs.update(_refused(_PANDAS_REFUSED))

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

    def option_key(key: Any) -> str:
        if type(key) is not str or not key.startswith("display."):
            raise refusal(f"option {key!r} is not available; only 'display.*' options can be changed")
        return key

    def set_option(*args: Any) -> None:
        if len(args) % 2:
            raise TypeError("set_option takes pairs: set_option('display.max_rows', 100)")
        for key in args[::2]:
            option_key(key)
        pd.set_option(*args)

    def option_context(*args: Any) -> Any:
        for key in args[::2]:
            option_key(key)
        return pd.option_context(*args)

    def reset_option(key: Any) -> None:
        pd.reset_option(option_key(key))

    attrs.update(
        set_option=set_option,
        option_context=option_context,
        reset_option=reset_option,
        get_option=pd.get_option,
    )
    return attrs


class RcParamsView:
    """matplotlib's rcParams for cells: read any key; set keys that name no file, program or module."""

    __slots__ = ()

    @staticmethod
    def _check(key: Any) -> str:
        import matplotlib

        if type(key) is not str or key not in matplotlib.rcParams:
            raise KeyError(f"{key!r} is not a matplotlib rcParams key")
        if not rc_settable(key):
            raise refusal(
                f"rcParams[{key!r}] cannot be set in the sandbox (only looks can: axes.*, lines.*, "
                "figure.figsize, font.size, ...; files, programs, fonts, backends and hooks cannot)"
            )
        return key

    def __getitem__(self, key: Any) -> Any:
        import matplotlib

        value = matplotlib.rcParams[key]
        return list(value) if isinstance(value, list) else value

    def __setitem__(self, key: Any, value: Any) -> None:
        import matplotlib

        matplotlib.rcParams[self._check(key)] = value

    def __contains__(self, key: Any) -> bool:
        import matplotlib

        return key in matplotlib.rcParams

    def update(self, values: Any = None, **kwargs: Any) -> None:
        items = dict(values or {}, **kwargs)
        for key in items:
            self._check(key)
        import matplotlib

        matplotlib.rcParams.update(items)

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if key in self else default

    def keys(self) -> list[str]:
        import matplotlib

        return list(matplotlib.rcParams.keys())

    def __repr__(self) -> str:
        return "<matplotlib rcParams (rlm sandbox view; keys naming files or programs are read-only)>"


def _matplotlib(session: SandboxSession) -> tuple[dict[str, Any], dict[str, Any]]:
    import matplotlib
    import matplotlib.pyplot as plt

    rc_view = RcParamsView()

    def rc_context(rc_dict: Any = None, fname: Any = None) -> Any:
        if fname is not None:
            raise refusal("rc_context(fname=...) reads a file; pass a dict of settings instead")
        for key in dict(rc_dict or {}):
            RcParamsView._check(key)
        return matplotlib.rc_context(rc=rc_dict)

    def rc(group: Any, **kwargs: Any) -> None:
        aliases = {"lw": "linewidth", "ls": "linestyle", "c": "color", "fc": "facecolor", "ec": "edgecolor"}
        aliases.update(mew="markeredgewidth", aa="antialiased")
        groups = [group] if isinstance(group, str) else list(group)
        for g in groups:
            for key in kwargs:
                RcParamsView._check(f"{g}.{aliases.get(key, key)}")
        plt.rc(group, **kwargs)

    def style_use(style: Any) -> None:
        names = [style] if isinstance(style, str) else list(style)
        for name in names:
            if type(name) is not str or (name not in plt.style.available and name != "default"):
                raise refusal(
                    f"style {name!r} is not available; styles are chosen by name from plt.style.available "
                    "(files and URLs are not read)"
                )
        plt.style.use(names)

    def style_context(style: Any, after_reset: bool = False) -> Any:
        names = [style] if isinstance(style, str) else list(style)
        for name in names:
            if type(name) is not str or (name not in plt.style.available and name != "default"):
                raise refusal(f"style {name!r} is not available; choose one of plt.style.available")
        return plt.style.context(names, after_reset=after_reset)

    style = make_facade(
        "matplotlib.style",
        {"use": style_use, "context": style_context, "available": tuple(plt.style.available)},
    )

    def rcdefaults() -> None:
        """Back to matplotlib's default looks (matplotlib's own rcdefaults re-reads its style library)."""
        matplotlib.rcParams.update({k: v for k, v in matplotlib.rcParamsDefault.items() if rc_settable(k)})

    def figure(*args: Any, **kwargs: Any) -> Any:
        if "FigureClass" in kwargs:
            raise refusal("figure(FigureClass=...) is not available in the sandbox")
        return plt.figure(*args, **kwargs)

    def subplots(*args: Any, **kwargs: Any) -> Any:
        if "FigureClass" in kwargs:
            raise refusal("subplots(FigureClass=...) is not available in the sandbox")
        return plt.subplots(*args, **kwargs)

    def savefig(*args: Any, **kwargs: Any) -> None:
        check_savefig(args, kwargs)
        plt.savefig(*args, **kwargs)

    def refused(what: str, reason: str) -> Callable[..., Any]:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise refusal(f"{what} is not available in the sandbox: {reason}")

        return refuse

    pyplot = {name: getattr(plt, name) for name in _PYPLOT_NAMES.split() if hasattr(plt, name)}
    pyplot.update(_refused(_PYPLOT_REFUSED))
    pyplot.update(
        figure=figure,
        subplots=subplots,
        savefig=savefig,
        show=lambda *args, **kwargs: figures.show(session),
        rcParams=rc_view,
        rc=rc,
        rc_context=rc_context,
        rcdefaults=rcdefaults,
        style=style,
        switch_backend=refused("plt.switch_backend", "the backend is Agg (figures are shown inline)"),
        ion=lambda: None,
        ioff=lambda: None,
        pause=refused("plt.pause", "there is no interactive backend"),
    )
    mpl = {
        "rcParams": rc_view,
        "rc_context": rc_context,
        "rcdefaults": rcdefaults,
        "colormaps": matplotlib.colormaps,
        "style": style,
        "use": refused("matplotlib.use", "the backend is Agg (figures are shown inline)"),
        "get_backend": lambda: "agg",
        **_refused(
            {
                "animation": "writes movies with external programs (ffmpeg); use plt.show() per frame",
                "backends": "the backend is Agg (figures are shown inline)",
                "font_manager": "reads font files; matplotlib's default fonts are used",
                "get_data_path": "names matplotlib's data files; files are not available in the sandbox",
                "get_cachedir": "names a directory; files are not available in the sandbox",
                "get_configdir": "names a directory; files are not available in the sandbox",
                "rc_file": _FILES,
                "rc_params_from_file": _FILES,
            }
        ),
    }
    return mpl, pyplot


def build(session: SandboxSession) -> dict[str, Any]:
    """Facades for DATA_MODULES bound to `session`; also registers the inline figure formatter."""
    np_attrs, linalg, rand = _numpy(session)
    linalg_facade = make_facade("numpy.linalg", linalg)
    random_facade = make_facade("numpy.random", rand)
    np_attrs.update(linalg=linalg_facade, random=random_facade)
    mpl, pyplot = _matplotlib(session)
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
