"""setuptools, plus two repairs to its editable wheels.

- setuptools leaves `[tool.setuptools.data-files]` out of editable wheels (pypa/setuptools#3399), so the
  README's `pip install -e .` would install no man page, and `git help lanes` (which `git lanes --help`
  becomes) would find none. The data files are added as a regular wheel has them:
  `<name>.data/data/<dir>/<file>`, each listed in RECORD.
- For a flat layout setuptools installs an import hook (`__editable___*_finder.py`, loaded by a `.pth` at
  every interpreter start) that imports pathlib, urllib.parse, ipaddress and importlib.util and then sits in
  front of every import: ~16 ms on each start of any Python in the venv, which an installed user never pays
  and which every hook call and every command would (issue 15). The hook is replaced by a `.pth` holding
  the project folder, what `python -m pytest` puts on `sys.path` anyway; the only other names it brings in
  are this repository's folders (`tests`, `bench`…) as namespace packages, which any installed package of
  the same name wins over."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403 - every other hook is setuptools' own

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    name = _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)
    _repair(Path(wheel_directory) / name)
    return name


def _data_files() -> dict[str, list[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return config.get("tool", {}).get("setuptools", {}).get("data-files", {})


def _repair(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as source:
        entries = [(info, source.read(info)) for info in source.infolist()]
    record_info, record = next((i, d) for i, d in entries if i.filename.endswith(".dist-info/RECORD"))
    dist = record_info.filename.split(".dist-info/")[0]
    added = [(f"{dist}.data/data/{target}/{Path(file).name}", (ROOT / file).read_bytes())
             for target, files in _data_files().items() for file in files]
    hook = [info.filename for info, _ in entries if _is_import_hook(info.filename)]
    if hook:  # a setuptools that names its hook otherwise keeps it: slower, never broken
        added.append((f"__editable__.{dist}.pth", f"{ROOT}\n".encode()))
    kept = [(info, data) for info, data in entries if info is not record_info and info.filename not in hook]
    lines = [line for line in record.decode().splitlines() if line.split(",")[0] not in hook]
    for arcname, content in added:
        digest = base64.urlsafe_b64encode(hashlib.sha256(content).digest()).rstrip(b"=").decode()
        lines.insert(-1, f"{arcname},sha256={digest},{len(content)}")
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as target_zip:
        for info, data in kept:
            target_zip.writestr(info, data)
        for arcname, content in added:
            target_zip.writestr(arcname, content)
        target_zip.writestr(record_info, "\n".join(lines) + "\n")


def _is_import_hook(name: str) -> bool:
    """setuptools' editable import hook: its `.pth` and the finder module that `.pth` imports."""
    return "/" not in name and name.startswith("__editable__") and name.endswith(("_finder.py", ".pth"))
