"""What a student's code keeps between calls, summed up so that a change shows and a reading costs little.

A forward pass that changes what the module or the student's file keeps (a count of calls, the
last output remembered, keys smoothed with the last call's) may answer the next question
differently, so the grader asks every question afresh from the first call that did
(grader/submission.py). Whether a call changed anything is read here, after every forward pass,
beside the student's code: this is the grader's own work, and the student's clock does not run
while it is done (grader/student_clock.py). So it must cost little whatever the file keeps:

- what the student's code *owns* is walked: instances of the classes its file (or notebook)
  defines, the functions it defines (their defaults, closures, attributes), containers, tensors
  and numpy arrays, torch modules, a ``SimpleNamespace``, a generator's state;
- an object of a library (a logger, a figure and its axes, a progress bar, an optimiser, a data
  loader) is taken by its identity: code that keeps state keeps it in what it owns, and a
  library object it replaces shows by its new identity. A logger reaches every logger of the
  process, a figure its whole tree of artists: walking them cost minutes a submission;
- every object is visited once: a second path to it, or a cycle, costs one entry;
- a walk stops at a budget of objects visited and elements hashed (``Budget``); past it the
  state is *unread*, which the grader treats as it treats a change (every question asked
  afresh, which grades the same: grader/submission.py) without saying the code keeps state.
"""

from __future__ import annotations

import collections
import functools
import random
import types
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import torch

try:  # numpy comes with torch here, but the grader does not need it
    import numpy
except ImportError:  # pragma: no cover - the requirements install it
    numpy = None


@dataclass(frozen=True)
class Budget:
    """How much one reading may cost. The solution's module and file cost some 60 objects and no
    tensor elements (its weights are the grader's, not state); a notebook with a demo model, a few
    figures and a small data set a few thousand objects."""

    visits: int = 4_000  # objects visited in one walk
    elements: int = 1 << 18  # tensor and array elements hashed in one walk; past it, by identity and version
    items: int = 4_096  # a larger container (a data set) is taken by identity and length


BUDGET = Budget()


class Unread:
    """A state that could not be read within the budget (or at all): equal to nothing, itself included."""

    __slots__ = ("why",)

    def __init__(self, why: str) -> None:
        self.why = why

    def __eq__(self, other: object) -> bool:
        return False

    __hash__ = object.__hash__


class _OverBudget(Exception):
    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


_PLAIN = frozenset({int, bool, str, bytes, complex, type(None)})
# Torch's own state is its modules' buffers and parts; everything else of nn.Module's is bookkeeping.
_MODULE_PARTS = frozenset({"_buffers", "_modules"})
_MODULE_INTERNALS = frozenset(vars(torch.nn.Module())) - _MODULE_PARTS
_CODE = (ModuleType, type, types.FunctionType, types.BuiltinFunctionType, types.MethodType, property,
         staticmethod, classmethod, functools.partial, types.MethodWrapperType, types.WrapperDescriptorType)
_HASHED_TENSOR = 1 << 16  # a larger tensor: identity, version and a sample of its elements
_SAMPLE = 4096


def read(value: Any, owner: str, budget: Budget = BUDGET) -> Any:
    """A hashable summary of ``value`` that changes when what it keeps changes, or an ``Unread``.
    ``owner``: the student's module name (``__name__``): instances of its classes are its own."""
    walk = _Walk(owner, budget)
    try:
        return walk.summary(value)
    except _OverBudget as over:
        return Unread(over.why)
    except Exception as error:  # noqa: BLE001 - state that cannot be read is not shown to be unchanged
        return Unread(f"it could not be read ({type(error).__name__})")


@dataclass(frozen=True)
class Reading:
    """What the parts of a module or a file keep (``summary``), and whether some part could not be
    read within the budget (``unread``): compared by summary."""

    summary: tuple
    unread: bool

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Reading) and self.summary == other.summary

    __hash__ = None  # not a key


def read_parts(parts: list[tuple[str, Any]], owner: str, latched: dict[str, int], budget: Budget = BUDGET) -> Reading:
    """Each part (a global of the file, the module) read on its own, within what is left of one
    budget for them all, so that one part too large to read (a graph of 3,000 nodes) leaves the
    others read (the dict in which the module remembers its last output). A part that does not fit
    is ``latched`` (its name: its object's id): from then on it is taken by identity alone, at no
    cost, and every reading that holds it is unread; bound to another object, it is read again."""
    walk = _Walk(owner, budget)
    summaries, unread = [], False
    for name, value in parts:
        if latched and latched.get(name) == id(value):
            summaries.append((name, "not read", id(value)))
            unread = True
            continue
        visits, elements = walk.visits_left, walk.elements
        try:
            summaries.append((name, walk.summary(value)))
        except Exception:  # noqa: BLE001 - past the budget, or unreadable: not shown to be unchanged
            latched[name] = id(value)
            summaries.append((name, "not read", id(value)))
            unread = True
            walk.visits_left, walk.elements = visits, elements  # what it spent on the part is given back
        walk.places.clear()  # each part read on its own: a part's record never points into another's
        walk.waiting.clear()
    return Reading(tuple(summaries), unread)


def file_parts(student: ModuleType) -> list[tuple[str, Any]]:
    """The file's globals (its own classes apart) and the attributes of the classes it defines, one part each."""
    kept, classes = file_kept(student)
    return [*kept.items(), *((f"class {name}", attributes) for name, attributes in classes.items())]


def objects_read(value: Any, owner: str, budget: Budget = BUDGET) -> int | None:
    """How many objects a reading of ``value`` visits, its cost (None: past the budget)."""
    walk = _Walk(owner, budget)
    try:
        walk.summary(value)
    except _OverBudget:
        return None
    return walk.budget.visits - walk.visits_left


def file_kept(student: ModuleType) -> tuple:
    """The file's globals (its own classes apart) and the attributes of the classes it defines."""
    name = getattr(student, "__name__", "")
    kept, classes = {}, {}
    for key, value in list(vars(student).items()):
        if key.startswith("__"):
            continue
        if isinstance(value, type) and value.__module__ == name:
            classes[key] = {k: v for k, v in vars(value).items() if not k.startswith("__")}
        else:
            kept[key] = value
    return kept, classes


class _Walk:
    """One reading: every object reached from the value, breadth first, each once, as a flat list
    of records in which an object another refers to is ("ref", its place). No recursion, so no
    depth to cut at: a configuration 200 deep is read whole, within the budget."""

    def __init__(self, owner: str, budget: Budget) -> None:
        self.owner = owner
        self.budget = budget
        self.visits_left = budget.visits
        self.places: dict[int, int] = {}  # id -> place in the order of discovery
        self.waiting: collections.deque = collections.deque()
        # What the walk made itself and visits (a closure's contents as a list): kept alive to its end,
        # so that no later object takes the id of one gone and passes for one already found.
        self.made: list = []
        self.elements = 0

    def summary(self, value: Any) -> Any:
        first = self.ref(value)
        records = []
        while self.waiting:
            item = self.waiting.popleft()
            kind = type(item)
            records.append((_HANDLING.get(kind) or _remember(kind))(self, item))
        return (first, tuple(records))

    def ref(self, value: Any) -> Any:
        """``value`` as a record holds it: a plain value as itself, code and a library's object by
        what says it (no children to find: they cost nothing), any other object by its place."""
        kind = type(value)
        if kind in _PLAIN:
            return value
        if kind is float:
            return repr(value)  # NaN is the same NaN
        handle = _HANDLING.get(kind) or _remember(kind)
        if handle is _Walk.code:
            return kind.__name__
        if handle is _Walk.instance and kind.__module__ != self.owner:
            return ("object", kind.__qualname__, id(value))
        if handle is _Walk.torch_module and not value._buffers and not value._modules:
            return ("module", kind.__name__)  # a Linear: nothing of a forward's kept
        if handle is _Walk.own_function and (value.__module__ != self.owner or not (
                value.__defaults__ or value.__kwdefaults__ or value.__closure__ or value.__dict__)):
            return "function"  # another file's, or one that keeps nothing
        if handle in _CONTAINERS and not len(value):
            return (kind.__name__,)  # empty: filled, it is found (its parent's record changes)
        key = id(value)
        place = self.places.get(key)
        if place is None:
            if self.visits_left <= 0:
                raise _OverBudget(f"it holds more than {self.budget.visits} objects")
            self.visits_left -= 1
            place = self.places[key] = len(self.places)
            self.waiting.append(value)
        return ("ref", place)

    # --- by kind: each returns the object's record ---------------------------------------------------

    # A tensor's or an array's elements are kept as their bytes, not a hash of them: a copy costs a
    # twentieth of hashing it (SipHash), and two readings are compared byte for byte. The budget's
    # elements bound what a reading holds (2 MB at most).
    def tensor(self, value: torch.Tensor) -> Any:
        plain = value.detach()
        count = plain.numel()
        described = (str(plain.dtype), tuple(plain.shape))
        if count > _HASHED_TENSOR or self.elements + count > self.budget.elements or plain.device.type != "cpu":
            # By identity and version (an in-place change moves it), and a sample while the budget lasts.
            sample = ()
            if self.elements + _SAMPLE <= self.budget.elements and plain.device.type == "cpu" and count:
                self.elements += _SAMPLE
                picked = plain.reshape(-1)[:: max(count // _SAMPLE, 1)][:_SAMPLE]
                sample = picked.contiguous().view(torch.uint8).numpy().tobytes()
            return ("tensor by identity", id(value), value._version, *described, sample)
        self.elements += count
        flat = plain.contiguous().reshape(-1)
        return ("tensor", *described, flat.view(torch.uint8).numpy().tobytes() if count else b"")

    def array(self, value: Any) -> Any:
        described = (str(value.dtype), tuple(value.shape))
        if value.dtype.hasobject:  # an array of Python objects: its items, as a list's
            items = list(value.reshape(-1)[: self.budget.items + 1])
            self.made.append(items)
            return ("object array", described, self.sequence(items))
        count = int(value.size)
        if count > _HASHED_TENSOR or self.elements + count > self.budget.elements:
            return ("array by identity", id(value), *described)
        self.elements += count
        return ("array", *described, numpy.ascontiguousarray(value).tobytes())

    def torch_module(self, value: torch.nn.Module) -> Any:
        # torch's own layers keep a forward's state in buffers only; their parts and buffers are
        # read in the module's own record (the dicts that hold them are torch's, never shared)
        return ("module", type(value).__name__, self.pairs(list(value._buffers.items())), self.pairs(list(value._modules.items())))

    def own_module(self, value: torch.nn.Module) -> Any:
        own = []
        for name, item in list(vars(value).items()):
            if name in _MODULE_PARTS and type(item) is dict:
                own.append((name, self.pairs(list(item.items()))))
            elif name not in _MODULE_INTERNALS:
                own.append((name, item if type(item) in _PLAIN else self.ref(item)))
        return ("module", type(value).__name__, tuple(own))

    def mapping(self, value: dict) -> Any:
        if len(value) > self.budget.items:
            return ("large container", type(value).__name__, id(value), len(value))
        return ("dict", self.pairs(list(value.items())))

    def pairs(self, items: list) -> tuple:
        ref = self.ref
        return tuple([
            (key if type(key) is str else ref(key), item if type(item) in _PLAIN else ref(item)) for key, item in items
        ])

    def sequence(self, value) -> Any:
        if len(value) > self.budget.items:
            return ("large container", type(value).__name__, id(value), len(value))
        ref = self.ref
        return (type(value).__name__, tuple([item if type(item) in _PLAIN else ref(item) for item in list(value)]))

    def unordered(self, value) -> Any:
        if len(value) > self.budget.items:
            return ("large container", type(value).__name__, id(value), len(value))
        # Each member's own record, not its place: a set's order of iteration is no order.
        members = []
        for item in list(value):
            kind = type(item)
            members.append(item if kind in _PLAIN else repr(item) if kind is float else (kind.__qualname__, id(item)))
        return (type(value).__name__, frozenset(members))

    def own_object(self, value: Any) -> Any:
        """An instance of a class of the student's: everything it holds."""
        own = getattr(value, "__dict__", None)
        slots = [(name, getattr(value, name)) for name in _slot_names(type(value)) if hasattr(value, name)]
        items = (list(own.items()) if isinstance(own, dict) else []) + slots
        return (type(value).__name__, self.pairs(items))

    def own_function(self, value: types.FunctionType) -> Any:
        """A function of the student's file: what it can keep between calls (mutable defaults, its
        closure's cells, attributes set on it). Another file's function is code only."""
        if value.__module__ != self.owner:
            return "function"
        cells = [cell.cell_contents for cell in value.__closure__ or () if _filled(cell)]
        self.made.append(cells)
        return ("function", value.__qualname__, self.ref(value.__defaults__), self.ref(value.__kwdefaults__),
                self.ref(cells), self.ref(value.__dict__))

    def generator(self, value: Any) -> Any:
        """A random generator: its state, which every draw moves."""
        if isinstance(value, torch.Generator):
            return ("generator", hash(value.get_state().numpy().tobytes()))
        return ("generator", hash(repr(value.getstate())))

    def library_object(self, value: Any) -> Any:
        return ("object", type(value).__qualname__, id(value))

    def code(self, value: Any) -> str:
        return type(value).__name__  # code, not state (a function swapped for another is not looked for)

    def instance(self, value: Any) -> Any:
        """Chosen per object: the type's module is the student's for some classes only."""
        if type(value).__module__ == self.owner:
            return self.own_object(value)
        return self.library_object(value)


def _filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:  # a cell not yet assigned
        return False
    return True


@functools.cache
def _slot_names(kind: type) -> tuple[str, ...]:
    names = []
    for klass in kind.__mro__:
        slots = vars(klass).get("__slots__", ())
        names += [slots] if isinstance(slots, str) else [name for name in slots if name not in ("__dict__", "__weakref__")]
    return tuple(names)


def _handling(kind: type):
    """How values of ``kind`` are summed up, decided once per type (the order matters: a Parameter
    is a tensor, a module's class is code, an OrderedDict a dict)."""
    if issubclass(kind, torch.Tensor):
        return _Walk.tensor
    if numpy is not None and issubclass(kind, numpy.ndarray):
        return _Walk.array
    if kind is types.FunctionType:
        return _Walk.own_function
    if issubclass(kind, _CODE):
        return _Walk.code
    if issubclass(kind, torch.nn.Module):
        return _Walk.torch_module if kind.__module__.startswith("torch.") else _Walk.own_module
    if issubclass(kind, dict):
        return _Walk.mapping
    if issubclass(kind, (list, tuple, collections.deque)):
        return _Walk.sequence
    if issubclass(kind, (set, frozenset)):
        return _Walk.unordered
    if issubclass(kind, (torch.Generator, random.Random)):
        return _Walk.generator
    if kind is types.SimpleNamespace:
        return _Walk.own_object
    return _Walk.instance


_HANDLING: dict[type, Any] = {}
_TYPES_REMEMBERED = 4096


_CONTAINERS = (_Walk.mapping, _Walk.sequence, _Walk.unordered)


def _remember(kind: type):
    handle = _handling(kind)
    if len(_HANDLING) < _TYPES_REMEMBERED:  # code that makes a class per call gains nothing from more
        _HANDLING[kind] = handle
    return handle
