"""The facades of matplotlib and matplotlib.pyplot: chosen plotting functions, a checked rcParams view.

Functions that read or write files, install callbacks, switch backends or change fonts process-wide are left
out with their reasons; rcParams keys that only change how figures look may be set (`rc_settable`), keys that
name files, programs, fonts, backends or code stay read-only. Figures are shown inline (figures.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import rlm_kernel.sandbox.data.figures as figures
from rlm_kernel.sandbox.data.attrs import check_savefig
from rlm_kernel.sandbox.errors import refusal
from rlm_kernel.sandbox.facade import make_facade, refused_entries
from rlm_kernel.sandbox.origin import register_display_path

if TYPE_CHECKING:
    from rlm_kernel.sandbox.session import SandboxSession

__all__ = ["FILES_REASON", "RcParamsView", "matplotlib_facades", "plain_settings", "rc_settable"]

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


FILES_REASON = (
    "reads or writes files, which are not available in the sandbox (load files with load_context())"
)
_PYPLOT_REFUSED = {
    "imread": FILES_REASON,
    "imsave": FILES_REASON,
    "get_current_fig_manager": "hands out the figure manager; use plt.show()",
    "connect": "installs event callbacks; they are not available in the sandbox",
    "xkcd": "changes fonts process-wide; it is not available in the sandbox",
    "install_repl_displayhook": "changes the kernel's display hook; it is not available in the sandbox",
    "get_backend": "the backend is always Agg in the sandbox",
}


def plain_settings(values: Any) -> dict[str, Any]:
    """An exact dict copy of a cell's mapping of settings, read once through `keys()` and `[key]` (a dict
    subclass whose `keys()` differs from its iteration, or whose items change between reads, cannot show the
    check one set of settings and matplotlib another): the copy is what is checked and passed on."""
    if values is None:
        return {}
    if type(values) is dict:
        return dict(values)
    if not hasattr(values, "keys"):
        raise TypeError(f"settings must be a dict, not {type(values).__name__}")
    return {key: values[key] for key in list(values.keys())}


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
        items = {**plain_settings(values), **kwargs}
        for key in items:
            self._check(key)
        import matplotlib

        matplotlib.rcParams.update(items)  # the copy that was checked

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if key in self else default

    def keys(self) -> list[str]:
        import matplotlib

        return list(matplotlib.rcParams.keys())

    def __repr__(self) -> str:
        return "<matplotlib rcParams (rlm sandbox view; keys naming files or programs are read-only)>"


def matplotlib_facades(session: SandboxSession) -> tuple[dict[str, Any], dict[str, Any]]:
    """The attributes of the matplotlib and matplotlib.pyplot facades for `session`."""
    import matplotlib
    import matplotlib.pyplot as plt

    rc_view = RcParamsView()

    def rc_context(rc_dict: Any = None, fname: Any = None) -> Any:
        if fname is not None:
            raise refusal("rc_context(fname=...) reads a file; pass a dict of settings instead")
        settings = plain_settings(rc_dict)
        for key in settings:
            RcParamsView._check(key)
        return matplotlib.rc_context(rc=settings)  # the copy that was checked

    def rc(group: Any, **kwargs: Any) -> None:
        aliases = {"lw": "linewidth", "ls": "linestyle", "c": "color", "fc": "facecolor", "ec": "edgecolor"}
        aliases.update(mew="markeredgewidth", aa="antialiased")
        groups = (group,) if isinstance(group, str) else tuple(group)
        if any(type(g) is not str for g in groups):
            raise refusal("rc(group, ...): the group must be a plain str such as 'lines' or a tuple of them")
        for g in groups:
            for key in kwargs:
                RcParamsView._check(f"{g}.{aliases.get(key, key)}")
        plt.rc(groups, **kwargs)  # the groups that were checked

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
    pyplot.update(refused_entries(_PYPLOT_REFUSED))
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
    register_display_path(pyplot["show"].__code__)  # a cell's plt.show() reaches display() through it
    mpl = {
        "rcParams": rc_view,
        "rc_context": rc_context,
        "rcdefaults": rcdefaults,
        "colormaps": matplotlib.colormaps,
        "style": style,
        "use": refused("matplotlib.use", "the backend is Agg (figures are shown inline)"),
        "get_backend": lambda: "agg",
        **refused_entries(
            {
                "animation": "writes movies with external programs (ffmpeg); use plt.show() per frame",
                "backends": "the backend is Agg (figures are shown inline)",
                "font_manager": "reads font files; matplotlib's default fonts are used",
                "get_data_path": "names matplotlib's data files; files are not available in the sandbox",
                "get_cachedir": "names a directory; files are not available in the sandbox",
                "get_configdir": "names a directory; files are not available in the sandbox",
                "rc_file": FILES_REASON,
                "rc_params_from_file": FILES_REASON,
            }
        ),
    }
    return mpl, pyplot
