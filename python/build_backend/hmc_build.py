# SPDX-License-Identifier: MIT
"""PEP 517/660 build backend for the pure-Python package hmc.

It needs nothing but the standard library, so pyproject.toml requires no
build dependency and `pip install ./python` works without a package index
(PyPI unreachable, build isolation on or off). It writes a py3-none-any
wheel of hmc/*.py, an editable wheel (a .pth file pointing here), or an
sdist. Metadata comes from the [project] table of pyproject.toml.
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "hmc"
ZIP_DATE = (1980, 1, 1, 0, 0, 0)        # reproducible archives


def _project():
    """name, version, description, requires-python, license of [project]."""
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    section = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    if not section:
        raise RuntimeError("pyproject.toml has no [project] table")
    fields = dict(re.findall(r'^([\w-]+)\s*=\s*"([^"]*)"\s*$',
                             section.group(1), re.M))
    for key in ("name", "version", "description", "requires-python"):
        if key not in fields:
            raise RuntimeError("pyproject.toml: [project] needs %s" % key)
    return fields


def _dist_info(p):
    return "%s-%s.dist-info" % (p["name"], p["version"])


def _metadata_files(p):
    metadata = ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\n"
                "Requires-Python: %s\nLicense: %s\n" %
                (p["name"], p["version"], p["description"],
                 p["requires-python"], p.get("license", "MIT")))
    wheel = ("Wheel-Version: 1.0\nGenerator: hmc_build\n"
             "Root-Is-Purelib: true\nTag: py3-none-any\n")
    return {"METADATA": metadata, "WHEEL": wheel,
            "top_level.txt": PACKAGE + "\n"}


def _package_files():
    out = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, PACKAGE)):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                out.append((os.path.relpath(path, ROOT), path))
    return out


def _write_wheel(wheel_directory, p, entries):
    """@entries: (archive name, bytes); adds dist-info and RECORD."""
    info = _dist_info(p)
    entries = list(entries) + [(info + "/" + name, text.encode())
                               for name, text in _metadata_files(p).items()]
    record = []
    name = "%s-%s-py3-none-any.whl" % (p["name"], p["version"])
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w",
                         zipfile.ZIP_DEFLATED) as zf:
        for arcname, data in entries:
            zi = zipfile.ZipInfo(arcname, ZIP_DATE)
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(zi, data)
            digest = base64.urlsafe_b64encode(
                hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append("%s,sha256=%s,%d" % (arcname, digest, len(data)))
        record.append(info + "/RECORD,,")
        zi = zipfile.ZipInfo(info + "/RECORD", ZIP_DATE)
        zi.external_attr = 0o644 << 16
        zf.writestr(zi, "\n".join(record) + "\n")
    return name


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def get_requires_for_build_wheel(config_settings=None):
    return []


get_requires_for_build_sdist = get_requires_for_build_wheel
get_requires_for_build_editable = get_requires_for_build_wheel


def prepare_metadata_for_build_wheel(metadata_directory,
                                     config_settings=None):
    p = _project()
    info = os.path.join(metadata_directory, _dist_info(p))
    os.makedirs(info, exist_ok=True)
    for name, text in _metadata_files(p).items():
        with open(os.path.join(info, name), "w", encoding="utf-8") as f:
            f.write(text)
    return _dist_info(p)


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None,
                metadata_directory=None):
    return _write_wheel(wheel_directory, _project(),
                        [(arc, _read(path)) for arc, path in _package_files()])


def build_editable(wheel_directory, config_settings=None,
                   metadata_directory=None):
    return _write_wheel(wheel_directory, _project(),
                        [(PACKAGE + ".pth", (ROOT + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    p = _project()
    base = "%s-%s" % (p["name"], p["version"])
    files = ["pyproject.toml", os.path.join("build_backend", "hmc_build.py")]
    files += [arc for arc, _ in _package_files()]
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as tf:
        for rel in files:
            data = _read(os.path.join(ROOT, rel))
            ti = tarfile.TarInfo(base + "/" + rel)
            ti.size = len(data)
            ti.mode = 0o644
            tf.addfile(ti, io.BytesIO(data))
        pkg_info = _metadata_files(p)["METADATA"].encode()
        ti = tarfile.TarInfo(base + "/PKG-INFO")
        ti.size = len(pkg_info)
        ti.mode = 0o644
        tf.addfile(ti, io.BytesIO(pkg_info))
    return name
