"""`rlm-kernel install` / `uninstall` / `tutorials`: put the `rlm` kernelspec where Jupyter finds it, and
copy the tutorials out of the installed package.

Same shape as ipykernel's and echo_kernel's install commands, through jupyter_client's `KernelSpecManager`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

from rlm_kernel import DISPLAY_NAME, KERNEL_NAME

__all__ = [
    "copy_tutorials",
    "install",
    "kernel_json",
    "main",
    "spec_source_dir",
    "tutorials_source_dir",
    "uninstall",
]

LOGOS = ("logo-32x32.png", "logo-64x64.png", "logo-svg.svg")


def spec_source_dir() -> Path | None:
    """The folder holding the shipped kernelspec: the checkout's `kernelspec/`, or the wheel's shared data."""
    candidates = [
        Path(__file__).resolve().parent.parent / "kernelspec",
        Path(sys.prefix) / "share" / "jupyter" / "kernels" / KERNEL_NAME,
    ]
    for candidate in candidates:
        if (candidate / "kernel.json").is_file():
            return candidate
    return None


def tutorials_source_dir() -> Path | None:
    """The tutorials the wheel ships (`share/rlm-kernel/tutorials`), or a checkout's `notebooks/`."""
    candidates = [
        Path(sys.prefix) / "share" / "rlm-kernel" / "tutorials",
        Path(__file__).resolve().parent.parent / "notebooks",
    ]
    for candidate in candidates:
        if any(candidate.glob("[0-9][0-9]-*.ipynb")):
            return candidate
    return None


def copy_tutorials(dest: Path, *, force: bool = False) -> list[Path]:
    """Copy the tutorial notebooks, their corpora (`data/`) and recorded calls (`.rlm-cache/`) into `dest`.

    Existing files are kept unless `force`: FileExistsError names the first one."""
    source = tutorials_source_dir()
    if source is None:
        raise FileNotFoundError("this installation has no tutorials (reinstall rlm-kernel from its wheel)")
    items = [*sorted(source.glob("[0-9][0-9]-*.ipynb")), source / "data", source / ".rlm-cache"]
    files = [
        (path, path.relative_to(source))
        for item in items
        if item.exists()
        for path in ([item] if item.is_file() else sorted(p for p in item.rglob("*") if p.is_file()))
    ]
    if not force:
        for _path, rel in files:
            if (dest / rel).exists():
                raise FileExistsError(f"{dest / rel} exists; pass --force to overwrite it")
    copied = []
    for path, rel in files:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest / rel)
        copied.append(dest / rel)
    return copied


def kernel_json(display_name: str = DISPLAY_NAME, env: dict[str, str] | None = None) -> dict:
    """The kernel.json written at install time, naming this Python so the spec works from any Jupyter."""
    spec: dict = {
        "argv": [sys.executable, "-P", "-m", "rlm_kernel", "-f", "{connection_file}"],
        "display_name": display_name,
        "language": "python",
        "interrupt_mode": "signal",
        "metadata": {"debugger": False},
    }
    if env:
        spec["env"] = dict(env)
    return spec


def install(
    *,
    user: bool = False,
    prefix: str | None = None,
    name: str = KERNEL_NAME,
    display_name: str | None = None,
    env: dict[str, str] | None = None,
    kernel_spec_manager: KernelSpecManager | None = None,
) -> str:
    """Install the kernelspec; return the folder it was written to."""
    if user and prefix:
        raise ValueError("choose one of --user and --prefix/--sys-prefix, not both")
    if display_name is None:
        display_name = DISPLAY_NAME if name == KERNEL_NAME else name
    ksm = kernel_spec_manager or KernelSpecManager()
    source = spec_source_dir()
    with tempfile.TemporaryDirectory() as tmp:
        staging = Path(tmp) / name
        staging.mkdir()
        if source is not None:
            for logo in LOGOS:
                if (source / logo).is_file():
                    shutil.copyfile(source / logo, staging / logo)
        (staging / "kernel.json").write_text(json.dumps(kernel_json(display_name, env), indent=2) + "\n")
        return ksm.install_kernel_spec(str(staging), kernel_name=name, user=user, prefix=prefix, replace=True)


def compile_package() -> bool:
    """Write the package's bytecode (`__pycache__/*.pyc`) now, as pip does when it installs a wheel.

    The confined kernel cannot write it itself (Landlock leaves the package read-only), so an editable
    install — or any run with PYTHONDONTWRITEBYTECODE set — would otherwise compile every module from
    source at each kernel start (~0.2 s quiet, several times that on a busy machine). True when every
    module compiled."""
    import compileall

    return bool(compileall.compile_dir(str(Path(__file__).resolve().parent), quiet=2))


def uninstall(name: str = KERNEL_NAME, *, kernel_spec_manager: KernelSpecManager | None = None) -> str:
    """Remove the kernelspec `name` from wherever Jupyter finds it first; return the removed folder."""
    ksm = kernel_spec_manager or KernelSpecManager()
    return ksm.remove_kernel_spec(name)


def _parse_env(items: Sequence[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"rlm-kernel: --env expects NAME=VALUE, got {item!r}")
        env[key] = value
    return env


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rlm-kernel", description="Manage the rlm Jupyter kernelspec.")
    sub = parser.add_subparsers(dest="command", required=True)
    inst = sub.add_parser("install", help="install the rlm kernelspec")
    where = inst.add_mutually_exclusive_group()
    where.add_argument(
        "--user", action="store_true", help="install for the current user (~/.local/share/jupyter)"
    )
    where.add_argument(
        "--sys-prefix", action="store_true", help=f"install into this environment ({sys.prefix})"
    )
    where.add_argument("--prefix", metavar="PATH", help="install under PATH/share/jupyter/kernels")
    inst.add_argument("--name", default=KERNEL_NAME, help=f"kernelspec name (default: {KERNEL_NAME})")
    inst.add_argument(
        "--display-name", default=None, help=f"name shown in Jupyter (default: {DISPLAY_NAME!r})"
    )
    inst.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="environment variable for the kernel, e.g. RLM_CPU_SECONDS=60 (repeatable)",
    )
    tut = sub.add_parser("tutorials", help="copy the tutorial notebooks and their data into a folder")
    tut.add_argument(
        "dest", nargs="?", default="rlm-tutorials", help="target folder (default: rlm-tutorials)"
    )
    tut.add_argument("--force", action="store_true", help="overwrite files that exist already")
    from rlm_kernel.mcp.cli import add_parser as add_mcp_parser

    add_mcp_parser(sub)
    uninst = sub.add_parser("uninstall", help="remove the rlm kernelspec")
    uninst.add_argument("--name", default=KERNEL_NAME, help=f"kernelspec name (default: {KERNEL_NAME})")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `rlm-kernel` command."""
    args = _build_parser().parse_args(argv)
    if args.command == "install":
        prefix = sys.prefix if args.sys_prefix else args.prefix
        user = bool(args.user)
        if not user and prefix is None and not os.access(_system_kernel_dir(), os.W_OK):
            print(
                "rlm-kernel: no write access to the system kernel folder; installing with --user",
                file=sys.stderr,
            )
            user = True
        try:
            path = install(
                user=user,
                prefix=prefix,
                name=args.name,
                display_name=args.display_name,
                env=_parse_env(args.env),
            )
        except OSError as exc:
            print(
                f"rlm-kernel: could not install the kernelspec: {exc}. Try --user or --sys-prefix.",
                file=sys.stderr,
            )
            return 1
        print(f"Installed kernelspec {args.name} in {path}")
        if not compile_package():
            print(
                "rlm-kernel: could not write the package's bytecode (read-only folder?); kernels compile "
                "it at every start",
                file=sys.stderr,
            )
        return 0
    if args.command == "mcp":
        from rlm_kernel.mcp.cli import main as mcp_main

        return mcp_main(args)
    if args.command == "tutorials":
        try:
            copied = copy_tutorials(Path(args.dest), force=args.force)
        except (OSError, FileExistsError) as exc:
            print(f"rlm-kernel: {exc}", file=sys.stderr)
            return 1
        notebooks = sum(1 for p in copied if p.suffix == ".ipynb")
        print(f"Copied {notebooks} tutorials with their data into {args.dest}: open them on the rlm kernel")
        return 0
    try:
        path = uninstall(args.name)
    except (NoSuchKernel, KeyError):
        print(
            f"rlm-kernel: no kernelspec named {args.name!r} is installed (see `jupyter kernelspec list`)",
            file=sys.stderr,
        )
        return 1
    print(f"Removed kernelspec {args.name} from {path}")
    return 0


def _system_kernel_dir() -> str:
    from jupyter_core.paths import SYSTEM_JUPYTER_PATH

    base = Path(SYSTEM_JUPYTER_PATH[0])
    while not base.exists() and base != base.parent:
        base = base.parent
    return str(base)


if __name__ == "__main__":
    raise SystemExit(main())
