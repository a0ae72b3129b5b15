"""How GitHub's Actions runner finds workflow commands in a step's output, re-implemented to test
what autograder.py prints. Every rule is the runner's own, from actions/runner at
258d6c857db3519913f7deb6004b60172f8043ae:

* src/Runner.Sdk/ProcessInvoker.cs: stdout and stderr are each read with
  ``StreamReader.ReadLine`` on a thread of their own: a line ends at ``\\n``, ``\\r`` or ``\\r\\n``
  (.NET's ReadLine), and the order between the two streams is not kept.
* src/Runner.Worker/Handlers/OutputManager.cs, ``OnDataReceived``: a line holding ``##[`` or
  ``::`` anywhere goes to the command manager.
* src/Runner.Worker/ActionCommandManager.cs, ``TryProcessCommand``: ``ActionCommand.TryParseV2``,
  else ``ActionCommand.TryParse``; while commands are stopped, a parsed command resumes them when
  its name is the stop token (case-insensitive) and is dropped otherwise; else
  ``stop-commands`` stops them with its data as the token (which is then a registered name).
  The names registered: stop-commands and the extensions src/Runner.Common/ExtensionManager.cs
  adds (``internal-set-repo-path`` only for plugins, so not here).
* src/Runner.Common/ActionCommand.cs: ``TryParseV2``: after ``TrimStart`` the line starts with
  ``::``, the next ``::`` ends the command info, the name runs to the first space and must be
  registered. ``TryParse``: ``##[`` anywhere, the next ``]`` ends the command info, the name
  likewise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

STOP_COMMAND = "stop-commands"
REGISTERED = frozenset({
    STOP_COMMAND, "set-env", "set-output", "save-state", "add-path", "add-mask", "add-matcher",
    "remove-matcher", "warning", "error", "notice", "debug", "group", "endgroup", "echo",
})
# .NET's String.TrimStart() with no argument trims Unicode white space (Char.IsWhiteSpace).
_LEADING_WHITE_SPACE = re.compile(r"^[\s\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+")


@dataclass(frozen=True)
class Command:
    name: str
    data: str
    line: str


def lines(stream: str) -> list[str]:
    """The lines .NET's StreamReader.ReadLine returns: split at \\r\\n, \\r and \\n."""
    return re.split(r"\r\n|\r|\n", stream.removesuffix("\n").removesuffix("\r"))


def _name_of(info: str) -> str:
    space = info.find(" ")
    return info if space < 0 else info[:space]


def parse(line: str, registered: set[str]) -> Command | None:
    """TryParseV2, then TryParse: the command a line holds, if its name is registered."""
    message = _LEADING_WHITE_SPACE.sub("", line)
    if message.startswith("::"):
        end = message.find("::", 2)
        if end >= 0:
            name = _name_of(message[2:end])
            if name.lower() in registered:
                return Command(name.lower(), message[end + 2:], line)
    start = line.find("##[")
    if start >= 0:
        end = line.find("]", start)
        if end >= 0:
            name = _name_of(line[start + 3:end])
            if name.lower() in registered:
                return Command(name.lower(), line[end + 1:], line)
    return None


def commands_run(stream: str) -> list[Command]:
    """Every command the runner carries out, in order, reading ``stream`` (one of stdout, stderr)."""
    registered = set(REGISTERED)
    stop_token: str | None = None
    run: list[Command] = []
    for line in lines(stream):
        if "##[" not in line and "::" not in line:
            continue
        command = parse(line, registered)
        if command is None:
            continue
        if stop_token is not None:
            if command.name == stop_token:
                registered.discard(stop_token)
                stop_token = None
                run.append(command)
            continue
        # ValidateStopToken refuses an empty token, a registered name and "pause-logging".
        token = command.data.lower()
        if command.name == STOP_COMMAND and token and token not in registered and token != "pause-logging":
            stop_token = token
            registered.add(stop_token)
        run.append(command)
    return run
