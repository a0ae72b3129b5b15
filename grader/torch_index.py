"""pip's arguments for the CPU build of torch: ``python grader/torch_index.py URL``.

On Linux, PyPI's ``torch`` wheel is the CUDA build, which pulls several GB of nvidia
packages; the PyTorch project's CPU wheel index (``URL``, the Makefile's ``TORCH_INDEX``)
serves the same version as ``+cpu``, which pip prefers. This prints
``--extra-index-url URL`` (with any extra index pip is already configured with, which a
command-line option would otherwise replace) when all of these hold:

* the machine is Linux (elsewhere PyPI's wheel is already the CPU build);
* ``URL`` is not empty (``make grade TORCH_INDEX=`` turns the index off; a CUDA index or a
  mirror may be given instead);
* ``URL`` answers within ``TORCH_INDEX_TIMEOUT`` seconds (default 3), DNS included.

Otherwise it prints nothing, and says why on stderr: a machine that cannot reach the index
(offline, or a local mirror of wheels) installs exactly as before, a few seconds later at
most. Standard library only: it runs before anything is installed.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import threading
import urllib.request

DEFAULT_TIMEOUT = 3.0


def reachable(url: str, timeout: float) -> bool:
    """Whether ``url``'s torch page answers within ``timeout`` seconds, name lookup included
    (a thread, because urllib's timeout does not bound the DNS lookup)."""
    answered = threading.Event()

    def probe() -> None:
        try:
            request = urllib.request.Request(url.rstrip("/") + "/torch/", method="HEAD")
            with urllib.request.urlopen(request, timeout=timeout) as response:
                if getattr(response, "status", 200) < 400:
                    answered.set()
        except Exception:  # noqa: BLE001 - any failure means: do not use this index
            pass

    threading.Thread(target=probe, daemon=True).start()
    return answered.wait(timeout)


def configured_extra_indexes(python: str = sys.executable) -> list[str]:
    """The extra indexes pip already uses (its configuration files and PIP_EXTRA_INDEX_URL)."""
    try:
        listed = subprocess.run(
            [python, "-m", "pip", "config", "list"], capture_output=True, text=True, timeout=30,
            stdin=subprocess.DEVNULL,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        listed = ""
    urls: list[str] = []
    for line in listed.splitlines():
        key, _, value = line.partition("=")
        if key.strip().endswith("extra-index-url"):
            urls += [url for url in value.strip().strip("'\"").split() if url not in urls]
    return urls


def pip_arguments(url: str, timeout: float = DEFAULT_TIMEOUT) -> tuple[list[str], str]:
    """The arguments to add to ``pip install``, and why (for stderr)."""
    if not url:
        return [], "TORCH_INDEX is empty: torch comes from pip's usual indexes"
    if platform.system() != "Linux":
        return [], f"{platform.system()}: PyPI's torch is already the CPU build"
    if not reachable(url, timeout):
        return [], f"{url} did not answer within {timeout:g} s: torch comes from pip's usual indexes"
    arguments: list[str] = []
    for extra in [url, *configured_extra_indexes()]:
        if extra not in arguments:
            arguments += ["--extra-index-url", extra]
    return arguments, f"torch's CPU build from {url}"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    url = argv[0].strip() if argv else ""
    try:
        timeout = float(os.environ.get("TORCH_INDEX_TIMEOUT", DEFAULT_TIMEOUT))
    except ValueError:
        timeout = DEFAULT_TIMEOUT
    arguments, why = pip_arguments(url, timeout)
    print(f"torch_index: {why}", file=sys.stderr)
    print(" ".join(arguments))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # a probe thread still waiting on a name lookup must not hold the exit


if __name__ == "__main__":
    main()
