"""The results set (what runs.json holds), as typed records.

Results is the whole set: how it was made, the machine, the allocators,
the workloads (built-in and --program), every run, the cells that could
not run, the strace table, the fast-path table, the security table, the
paired pass and the plots drawn.  Each
record declares its defaults once, where its fields are declared; they are
what a results set written by an older harness, read back with
--report-only, gets for what it lacks.  to_json() gives the dict written
to runs.json; from_json() reads one back, ignoring keys it does not know.
"""

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from enum import Enum
from typing import Any

from .allocators import Allocator
from .parse import SyscallCounts
from .programs import KIND as PROGRAM_KIND, Program
from .workloads import Mode, Workload


def known_fields(cls: type, data: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of data that are fields of the dataclass cls."""
    names = {f.name for f in fields(cls)}
    return {key: value for key, value in data.items() if key in names}


def without_none(data: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if value is not None}


@dataclass
class Run:
    """One measured run of a (workload, point, allocator) cell."""
    workload: str
    point: str
    allocator: str
    rep: int = 0
    ok: bool = True
    reason: str = ""          # why it failed
    wall: float = 0.0
    user: float = 0.0
    sys: float = 0.0
    maxrss_kb: int = 0
    exit_code: int = 0        # -1 when killed by a signal
    signal: int = 0
    metrics: dict[str, float] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    command: list[str] = field(default_factory=list)   # settings, argv
    stdout_tail: str = ""     # a failed run's last output (kept only then)
    stderr_tail: str = ""

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        if self.ok:
            del data["stdout_tail"], data["stderr_tail"]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Run":
        return cls(**known_fields(cls, data))


@dataclass
class MissingCell:
    """A cell that has no runs: the allocator is missing, the program not
    built, or the allocator does not apply to the workload."""
    workload: str
    point: str
    allocator: str
    reason: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "MissingCell":
        return cls(**known_fields(cls, data))


@dataclass
class StraceRow:
    """One run under `strace -c -f`; its counts are None when strace wrote
    nothing."""
    workload: str
    allocator: str
    ok: bool
    reason: str = ""
    file: str = ""            # the raw table, under strace/
    wall: float = 0.0
    calls: SyscallCounts | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        del data["calls"]
        if self.calls is not None:
            data.update(asdict(self.calls))
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "StraceRow":
        names = [f.name for f in fields(SyscallCounts)]
        calls = SyscallCounts(**{n: data[n] for n in names}) \
            if all(n in data for n in names) else None
        return cls(**known_fields(cls, data), calls=calls)


@dataclass
class StracePass:
    available: bool = False
    note: str = ""            # why it is not available
    rows: list[StraceRow] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"available": self.available, "note": self.note,
                "rows": [r.to_json() for r in self.rows]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "StracePass":
        given = known_fields(cls, data)
        given["rows"] = [StraceRow.from_json(r) for r in data.get("rows", [])]
        return cls(**given)


class Mix(Enum):
    """The script's columns, in its order: the sizes of the pairs."""
    FIXED = "fixed"
    MIX = "mix"

    @property
    def title(self) -> str:
        return "64 bytes" if self is Mix.FIXED else "size mix (8..512 B)"


@dataclass
class FastpathRow:
    """One allocator's count for one mix (a row of fastpath.csv).

    value is None unless ok; measured False is an allocator the pass does
    not apply to (or a missing one), ok False with measured True a failed
    measurement."""
    allocator: str
    mix: Mix
    instructions_per_pair: float | None = None
    ok: bool = True
    measured: bool = True
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return dict(asdict(self), mix=self.mix.value)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "FastpathRow":
        return cls(**dict(known_fields(cls, data), mix=Mix(data["mix"])))


@dataclass
class FastpathPass:
    """The fast-path pass (fastpath.py): its rows, the command that
    reproduces them, the run lengths (SHORT, LONG) and its duration; or,
    not available, why."""
    available: bool = False
    note: str = ""
    rows: list[FastpathRow] = field(default_factory=list)
    command: str | None = None
    pairs: tuple[int, int] | None = None
    wall: float | None = None

    def to_json(self) -> dict[str, Any]:
        return without_none({
            "available": self.available, "note": self.note,
            "rows": [r.to_json() for r in self.rows],
            "command": self.command,
            "pairs": list(self.pairs) if self.pairs else None,
            "wall": self.wall})

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "FastpathPass":
        given = known_fields(cls, data)
        given["rows"] = [FastpathRow.from_json(r)
                         for r in data.get("rows", [])]
        pairs = data.get("pairs")
        given["pairs"] = (int(pairs[0]), int(pairs[1])) if pairs else None
        return cls(**given)


class Outcome(Enum):
    """What became of one misuse program (security.py)."""
    CAUGHT = "caught"
    NOT_CAUGHT = "not caught"
    HANG = "hang"
    ERROR = "error"


@dataclass
class SecurityRow:
    """One misuse program (kind, size) run with one allocator (a row of
    security.csv); detail: the signal that stopped it, or what went
    wrong."""
    kind: str
    size: str
    allocator: str
    outcome: Outcome
    detail: str = ""

    @property
    def caught(self) -> bool:
        return self.outcome is Outcome.CAUGHT

    def to_json(self) -> dict[str, Any]:
        return dict(asdict(self), outcome=self.outcome.value)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "SecurityRow":
        return cls(**dict(known_fields(cls, data),
                          outcome=Outcome(data["outcome"])))


@dataclass
class SecurityPass:
    """The security pass (security.py): its rows, the allocators it did
    not run with and why, its duration; or, not available, why."""
    available: bool = False
    note: str = ""
    rows: list[SecurityRow] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    wall: float | None = None

    def to_json(self) -> dict[str, Any]:
        return without_none({
            "available": self.available, "note": self.note,
            "rows": [r.to_json() for r in self.rows],
            "skipped": dict(self.skipped), "wall": self.wall})

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "SecurityPass":
        given = known_fields(cls, data)
        given["rows"] = [SecurityRow.from_json(r)
                         for r in data.get("rows", [])]
        return cls(**given)


@dataclass
class Plots:
    """The plots drawn: {workload: [paths relative to the run's folder]}.
    A results set without plots has nothing to say about them."""
    available: bool = True
    note: str = ""            # why there are none
    files: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Plots":
        return cls(**known_fields(cls, data))


@dataclass
class WorkloadEntry:
    """A workload as the report shows it: a built-in one, or a --program
    command (program set, with the command line that reruns it alone)."""
    name: str
    title: str
    points: list[str]
    summary: str = ""
    metric_order: list[str] = field(default_factory=list)
    program: Program | None = None
    reproduce: str = ""

    @property
    def is_program(self) -> bool:
        return self.program is not None

    @classmethod
    def of_workload(cls, workload: Workload, full: bool) -> "WorkloadEntry":
        return cls(workload.name, workload.title,
                   [p.label for p in workload.points(full)],
                   workload.summary, list(workload.metric_order))

    @classmethod
    def of_program(cls, program: Program,
                   reproduce: str) -> "WorkloadEntry":
        return cls(program.name, program.title, [program.point],
                   program=program, reproduce=reproduce)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "name": self.name, "title": self.title, "summary": self.summary,
            "points": list(self.points),
            "metric_order": list(self.metric_order)}
        if self.program is not None:
            data.update(asdict(self.program), kind=PROGRAM_KIND,
                        reproduce=self.reproduce)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "WorkloadEntry":
        given = known_fields(cls, data)
        if data.get("kind") == PROGRAM_KIND:
            given["program"] = Program(**known_fields(Program, data))
        return cls(**given)


@dataclass
class PairedPoint:
    """A point of the paired pass (paired.py): the fastest peer, the main
    pass's ratio, and per round (wall, CPU) the two figures, tlmalloc's
    first; failed counts the rounds left out for a failed run."""
    workload: str
    point: str
    peer: str
    main_ratio: float = 0.0
    walls: list[tuple[float, float]] = field(default_factory=list)
    cpus: list[tuple[float, float]] = field(default_factory=list)
    failed: int = 0

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "PairedPoint":
        given = known_fields(cls, data)
        for key in ("walls", "cpus"):
            given[key] = [tuple(pair) for pair in data.get(key, [])]
        return cls(**given)


@dataclass
class PairedPass:
    """The paired pass, or why it did not run."""
    available: bool = False
    note: str = ""
    rounds: int = 0
    points: list[PairedPoint] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "PairedPass":
        given = known_fields(cls, data)
        given["points"] = [PairedPoint.from_json(p)
                           for p in data.get("points", [])]
        return cls(**given)


@dataclass
class Results:
    """A whole results set (runs.json)."""
    allocators: list[Allocator]
    workloads: list[WorkloadEntry]
    runs: list[Run] = field(default_factory=list)
    command: str = ""
    repo: str = ""            # the repository, cut from the paths shown
    mode: Mode | None = None
    reps: int = 0
    slow: float = 0           # the run-once threshold (s), 0 = off
    started: str = "?"
    duration_s: int | None = None
    interrupted: bool = False
    machine: dict[str, str] = field(default_factory=dict)
    missing: list[MissingCell] = field(default_factory=list)
    strace: StracePass = field(
        default_factory=lambda: StracePass(note="strace not run"))
    fastpath: FastpathPass = field(
        default_factory=lambda: FastpathPass(note="not run"))
    security: SecurityPass = field(
        default_factory=lambda: SecurityPass(note="not run"))
    paired: PairedPass = field(
        default_factory=lambda: PairedPass(note="not run"))
    plots: Plots = field(default_factory=Plots)

    def allocator_names(self) -> list[str]:
        return [a.name for a in self.allocators]

    def missing_allocators(self) -> list[str]:
        return [a.name for a in self.allocators if not a.found]

    def to_json(self) -> dict[str, Any]:
        return without_none({
            "command": self.command, "repo": self.repo,
            "mode": self.mode.value if self.mode else None,
            "reps": self.reps, "slow": self.slow, "started": self.started,
            "duration_s": self.duration_s, "interrupted": self.interrupted,
            "machine": dict(self.machine),
            "allocators": [a.to_json() for a in self.allocators],
            "workloads": [w.to_json() for w in self.workloads],
            "runs": [r.to_json() for r in self.runs],
            "missing": [asdict(m) for m in self.missing],
            "strace": self.strace.to_json(),
            "fastpath": self.fastpath.to_json(),
            "security": self.security.to_json(),
            "paired": self.paired.to_json(),
            "plots": asdict(self.plots)})

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Results":
        given = known_fields(cls, data)
        given["allocators"] = [Allocator.from_json(a)
                               for a in data["allocators"]]
        given["workloads"] = [WorkloadEntry.from_json(w)
                              for w in data["workloads"]]
        given["runs"] = [Run.from_json(r) for r in data.get("runs", [])]
        given["missing"] = [MissingCell.from_json(m)
                            for m in data.get("missing", [])]
        mode = data.get("mode")
        given["mode"] = Mode(mode) if mode in {m.value for m in Mode} \
            else None
        if "strace" in data:
            given["strace"] = StracePass.from_json(data["strace"])
        if "fastpath" in data:
            given["fastpath"] = FastpathPass.from_json(data["fastpath"])
        if "security" in data:
            given["security"] = SecurityPass.from_json(data["security"])
        if "paired" in data:
            given["paired"] = PairedPass.from_json(data["paired"])
        if "plots" in data:
            given["plots"] = Plots.from_json(data["plots"])
        return cls(**given)
