"""The images a rehearsal grades in: a fresh base system, the machine's package sources, build steps.

An image here is a stack of folders mounted as one overlay root by ``container.py`` (the way
Docker stacks an image's layers): the base system at the bottom, a layer with this
machine's package sources, then what each build step wrote.

* ``base_system`` is ``debootstrap --variant=minbase bookworm`` from the Debian archive apt
  uses here, built once into the cache folder (``--rebuild`` builds it again) and never
  written to afterwards.
* ``package_sources`` is the one thing of this machine inside: how pip and apt reach their
  registries here (pip's configuration files, the certificate bundle they name, the PIP_*
  variables and the local wheel folder they point to). CI reaches the same registries.
* ``Step`` runs one build step in a container with the network and no limits, its writes
  going to the image's next layer.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

CONTAINER = Path(__file__).with_name("container.py")
SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's: python3-seccomp is installed for it
SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
PIP_CONFIGURATION = (Path("/etc/pip.conf"), Path("/etc/xdg/pip"))


def debian_mirror() -> str:
    """The first Debian archive apt is configured with here (deb822 or one-line sources)."""
    sources = [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]
    for path in sources:
        try:
            text = path.read_text()
        except OSError:
            continue
        match = re.search(r"^URIs:\s*(\S+/debian)/?\s*$", text, re.M) or re.search(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+/debian)/?\s", text, re.M)
        if match:
            return match.group(1)
    return DEFAULT_MIRROR


def base_system(cache: Path, rebuild: bool = False, log=print) -> Path:
    """The cached minimal Debian root, built with debootstrap when missing (or ``rebuild``)."""
    root = cache / f"{SUITE}-minbase"
    if root.is_dir() and not rebuild:
        return root
    if shutil.which("debootstrap") is None:
        raise SystemExit("rehearse: debootstrap is missing (apt-get install debootstrap)")
    cache.mkdir(parents=True, exist_ok=True)
    building = cache / f".{SUITE}-minbase.building"
    shutil.rmtree(building, ignore_errors=True)
    mirror = debian_mirror()
    log(f"building a fresh {SUITE} root (debootstrap --variant=minbase, {mirror}) in {root} ...")
    started = time.monotonic()
    completed = subprocess.run(
        ["debootstrap", "--variant=minbase", SUITE, str(building), mirror], capture_output=True, text=True
    )
    if completed.returncode != 0:
        raise SystemExit(f"rehearse: debootstrap failed:\n{completed.stdout[-3000:]}{completed.stderr[-3000:]}")
    shutil.rmtree(root, ignore_errors=True)
    building.rename(root)
    log(f"  built in {time.monotonic() - started:.0f} s")
    return root


@dataclass
class PackageSources:
    layer: Path
    environment: dict[str, str]
    binds: list[str]


def package_sources(layer: Path) -> PackageSources:
    """A layer holding this machine's pip configuration, and what the containers need with it."""
    shutil.rmtree(layer, ignore_errors=True)
    layer.mkdir(parents=True)
    environment = {name: value for name, value in os.environ.items() if name.startswith("PIP_")}
    binds = []
    for path in PIP_CONFIGURATION:
        if path.is_dir():
            shutil.copytree(path, layer / path.relative_to("/"))
        elif path.is_file():
            (layer / path.parent.relative_to("/")).mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, layer / path.relative_to("/"))
    # The certificate bundle pip is told to trust here, at a path of its own: a package that
    # installs ca-certificates rewrites /etc/ssl/certs/ca-certificates.crt inside the image.
    bundles = [Path(c) for c in (environment.get("PIP_CERT"), *_configured("cert")) if c and Path(c).is_file()]
    if bundles:
        inside = Path("/usr/local/share/rehearsal/pip-certificates.crt")
        (layer / inside.parent.relative_to("/")).mkdir(parents=True)
        shutil.copy2(bundles[0], layer / inside.relative_to("/"))
        environment["PIP_CERT"] = str(inside)
    for folder in environment.get("PIP_FIND_LINKS", "").split():
        if Path(folder).is_dir():
            binds.append(f"{folder}:{folder}:ro")
    return PackageSources(layer, environment, binds)


def _configured(option: str) -> list[str]:
    values = []
    for path in PIP_CONFIGURATION:
        for file in ([*path.glob("*.conf")] if path.is_dir() else [path]):
            try:
                values += re.findall(rf"^\s*{option}\s*=\s*(\S+)", file.read_text(), re.M)
            except OSError:
                pass
    return values


@dataclass
class Container:
    """One ``container.py`` run: the layers, the limits, the folders bound in."""

    base: Path
    layers: list[Path] = field(default_factory=list)
    upper: Path | None = None
    cpus: float | None = None
    memory: str | None = None
    pids: int | None = None
    network: bool = True
    binds: list[str] = field(default_factory=list)
    environment: dict[str, str] = field(default_factory=dict)
    workdir: str = "/"
    timeout: float | None = None

    def run(self, command: list[str], log_file: Path, report: Path | None = None) -> int:
        arguments = [SYSTEM_PYTHON, str(CONTAINER), "--root", str(self.base), "--workdir", self.workdir]
        arguments += [item for layer in self.layers for item in ("--layer", str(layer))]
        arguments += ["--upper", str(self.upper)] if self.upper else []
        arguments += ["--cpus", str(self.cpus)] if self.cpus else []
        arguments += ["--memory", self.memory] if self.memory else []
        arguments += ["--pids", str(self.pids)] if self.pids else []
        arguments += [] if self.network else ["--no-network"]
        arguments += ["--timeout", str(self.timeout)] if self.timeout else []
        arguments += ["--report", str(report)] if report else []
        arguments += [item for bind in self.binds for item in ("--bind", bind)]
        arguments += [item for name, value in self.environment.items() for item in ("--env", f"{name}={value}")]
        with open(log_file, "a", encoding="utf-8") as log:
            log.write(f"\n$ {' '.join(command)}\n")
            log.flush()
            return subprocess.run([*arguments, "--", *command], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL).returncode


def build_step(container: Container, script: str, log_file: Path, what: str) -> float:
    """Run one build step (a shell script); its seconds. A failed step ends the rehearsal."""
    started = time.monotonic()
    status = container.run(["/bin/bash", "-c", script], log_file)
    if status != 0:
        tail = log_file.read_text(errors="replace")[-4000:]
        sys.exit(f"rehearse: {what} failed (exit {status}); the end of {log_file}:\n{tail}")
    return time.monotonic() - started


@dataclass
class DockerfileStep:
    instruction: str  # FROM, RUN, COPY, ENV
    argument: str


def dockerfile_steps(text: str) -> list[DockerfileStep]:
    """A Dockerfile's instructions in order, continuation lines joined, comments dropped."""
    steps, current = [], ""
    for line in text.splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        current += line.rstrip()
        if current.endswith("\\"):
            current = current[:-1] + " "
            continue
        instruction, _, argument = current.strip().partition(" ")
        steps.append(DockerfileStep(instruction.upper(), argument.strip()))
        current = ""
    return steps
