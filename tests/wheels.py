"""Wheels made on the spot, for pip to install from a file without an index.

The layout is the binary distribution format's (packaging.python.org, "Binary distribution
format"): the files, then a .dist-info folder with METADATA, WHEEL and RECORD, RECORD's
hashes being urlsafe base64 sha256 without padding.
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path


def pure_python_wheel(folder: Path, name: str, files: dict[str, bytes], version: str = "1.0") -> Path:
    """A py3-none-any wheel of ``files`` (path in site-packages -> content), written in ``folder``."""
    dist = f"{name}-{version}.dist-info"
    contents = {
        **files,
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }

    def record(path: str, data: bytes) -> str:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        return f"{path},sha256={digest},{len(data)}"

    records = [*(record(path, data) for path, data in contents.items()), f"{dist}/RECORD,,"]
    contents[f"{dist}/RECORD"] = ("\n".join(records) + "\n").encode()
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in contents.items():
            archive.writestr(path, data)
    return wheel
