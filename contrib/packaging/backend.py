"""setuptools, plus the data files in editable installs.

setuptools leaves `[tool.setuptools.data-files]` out of editable wheels (pypa/setuptools#3399), so the
README's `pip install -e .` would install no man page, and `git help lanes` (which `git lanes --help`
becomes) would find none. This backend builds the editable wheel with setuptools and adds the data files
to it, as a regular wheel has them: `<name>.data/data/<dir>/<file>`, each listed in RECORD."""

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
    _add_data_files(Path(wheel_directory) / name)
    return name


def _data_files() -> dict[str, list[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return config.get("tool", {}).get("setuptools", {}).get("data-files", {})


def _add_data_files(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as source:
        entries = [(info, source.read(info)) for info in source.infolist()]
    record_info, record = next((i, d) for i, d in entries if i.filename.endswith(".dist-info/RECORD"))
    data_dir = record_info.filename.split(".dist-info/")[0] + ".data/data"
    added = []
    for target, files in _data_files().items():
        for file in files:
            content = (ROOT / file).read_bytes()
            added.append((f"{data_dir}/{target}/{Path(file).name}", content))
    lines = record.decode().splitlines()
    for arcname, content in added:
        digest = base64.urlsafe_b64encode(hashlib.sha256(content).digest()).rstrip(b"=").decode()
        lines.insert(-1, f"{arcname},sha256={digest},{len(content)}")
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as target_zip:
        for info, data in entries:
            if info is not record_info:
                target_zip.writestr(info, data)
        for arcname, content in added:
            target_zip.writestr(arcname, content)
        target_zip.writestr(record_info, "\n".join(lines) + "\n")
