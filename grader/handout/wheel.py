"""The student grader as one wheel: ``python -m grader wheel OUT_DIR``.

For notebooks that run alone, in Google Colab or a hosted Jupyter, where no grader/ folder is
beside them: the instructor publishes this file (a course page, a GitHub release, a package
index) and generates the notebook with ``--install-from`` its address; the notebook's setup
cell installs it into the kernel (grader/handout/kernel_install.py). It also installs offline
from the file itself (``pip install ./multi_head_attention_grader-...whl``; each exercise's grader is a
package of its own name: ``feed_forward_grader-...whl``).

It holds what the student release holds of the grader and nothing more: the grader package's
own files (``release.own_files``: the visible checks, the reference examples, the notebook's
checks, what ``pytest grader`` loads, with its student subfolders feedback/, reading/ and session/), none
of its instructor subpackages (hidden/, sandbox/, batch/, handout/), and the scaffolding level it was made for. The release's leak scan runs on the
wheel's contents before it is kept: a wheel holding a line of solution text is not written.

Built with the standard library, as the wheel format specifies it (a zip archive with a
``.dist-info`` folder of METADATA, WHEEL and RECORD; PEP 427 and
https://packaging.python.org/en/latest/specifications/binary-distribution-format/, core
metadata: https://packaging.python.org/en/latest/specifications/core-metadata/). The archive is
deterministic: entries sorted, one fixed timestamp, so the same sources give the same bytes.
"""

from __future__ import annotations

import base64
import hashlib
import re
import sys
import tempfile
import zipfile
from pathlib import Path

from grader import __version__
from grader.handout import release, stubs
from grader.seam import registry

# The kernel's own packages are kept as they are (kernel_install pins torch and numpy), so each
# requirement says what the grader needs, never a pin. torch: the lowest release the grader was
# run on in a kernel (tests/test_colab.py; docs/platforms/colab.md). pytest: the
# grader's conftest narrows pytest's conftest search through a private method, checked on 9.0
# and 9.1, so a major version it has not met is refused rather than trusted.
REQUIREMENTS = ("torch>=2.13", "numpy", "pytest>=9.0,<10", "pytest-timeout>=2.4")
REQUIRES_PYTHON = ">=3.11"
TAG = "py3-none-any"
FIXED_TIME = (1980, 1, 1, 0, 0, 0)  # the zip format's earliest date: no build time in the bytes


class WheelLeak(RuntimeError):
    """The wheel's contents hold solution text."""


def distribution_name() -> str:
    """The exercise's student grader as an installable package (it imports as ``grader``): a name
    per exercise (its declaration's), so that a kernel holding one exercise's grader installs
    the next exercise's rather than taking it for installed."""
    return registry.exercise().distribution_name


def summary() -> str:
    title = registry.exercise().title
    return f"The student grader of the {title[:1].lower()}{title[1:]} exercise (visible checks only)"


def normalized_name(name: str | None = None) -> str:
    """The name as a wheel's file name spells it (PEP 503 normalisation, ``-`` as ``_``)."""
    return re.sub(r"[-_.]+", "-", name or distribution_name()).lower().replace("-", "_")


def wheel_name(version: str = __version__) -> str:
    return f"{normalized_name()}-{version}-{TAG}.whl"


def package_files(level: str) -> dict[str, bytes]:
    """What the wheel installs, by path: the grader's own files and its scaffolding level."""
    files = {relative: path.read_bytes() for relative, path in release.own_files()}
    files[f"grader/{stubs.LEVEL_FILE.name}"] = f"{level}\n".encode()
    student_folders = {Path(folder) for folder in release.OWN_FILES_ONLY}
    stray = sorted(name for name in files if Path(name).parent not in student_folders)
    if stray:  # release.own_files takes no instructor subfolder; say so loudly should that ever change
        raise ValueError(f"the student wheel holds only the grader's own files, not {stray}")
    return files


def metadata(version: str = __version__, requirements: tuple[str, ...] = REQUIREMENTS) -> str:
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {distribution_name()}",
        f"Version: {version}",
        f"Summary: {summary()}",
        f"Requires-Python: {REQUIRES_PYTHON}",
        *(f"Requires-Dist: {requirement}" for requirement in requirements),
    ]
    return "\n".join(lines) + "\n"


def wheel_file() -> str:
    return f"Wheel-Version: 1.0\nGenerator: grader.handout.wheel\nRoot-Is-Purelib: true\nTag: {TAG}\n"


def record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def wheel_entries(level: str, version: str = __version__, requirements: tuple[str, ...] = REQUIREMENTS) -> dict[str, bytes]:
    """Every entry of the archive, RECORD last, as installers read it."""
    dist_info = f"{normalized_name()}-{version}.dist-info"
    entries = dict(sorted(package_files(level).items()))
    entries[f"{dist_info}/METADATA"] = metadata(version, requirements).encode()
    entries[f"{dist_info}/WHEEL"] = wheel_file().encode()
    record = [record_line(name, data) for name, data in entries.items()] + [f"{dist_info}/RECORD,,"]
    entries[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    return entries


def write_wheel(path: Path, entries: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            info = zipfile.ZipInfo(name, date_time=FIXED_TIME)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return path


def leaked_solution_lines(wheel: Path, level: str) -> list[str]:
    """The release's leak scan (``release.leaked_solution_lines``) on the wheel's contents."""
    with tempfile.TemporaryDirectory(prefix="grader-wheel-") as folder:
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(folder)
        return release.leaked_solution_lines(Path(folder), level=level)


def build_wheel(out_dir: Path, level: str = stubs.DEFAULT_LEVEL) -> Path:
    """Write the student wheel into ``out_dir``; refuse (and write nothing) if it would leak."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / wheel_name()
    with tempfile.TemporaryDirectory(prefix="grader-wheel-", dir=out_dir) as folder:
        candidate = write_wheel(Path(folder) / target.name, wheel_entries(level))
        leaks = leaked_solution_lines(candidate, level)
        if leaks:
            raise WheelLeak("the wheel would hold solution text:\n  " + "\n  ".join(leaks[:10]))
        candidate.replace(target)
    return target


def add_arguments(parser) -> None:
    parser.add_argument("out_dir", type=Path, help="folder to write the wheel into (created if missing)")
    stubs.add_level_argument(parser)


def run(arguments) -> int:
    level = arguments.level or stubs.recorded_level()
    try:
        path = build_wheel(arguments.out_dir, level)
    except WheelLeak as leak:
        print(f"{leak}\nfix before publishing it", file=sys.stderr)
        return 1
    print(f"wrote {path} ({level} scaffolding; requires {', '.join(REQUIREMENTS)}; no solution text found in it)")
    print(f"publish it, then: python -m grader release OUT --install-from URL_OF_{path.name}")
    return 0
