"""Correctness scenarios: a planted bug that makes a CUDA program wrong (or crash), the fix, and the
tool that finds it. ``scenarios/scenario-NN-<slug>/scenario.toml`` with ``kind = "correctness"``;
``scenarios/README.md`` ("Correctness scenarios") documents the format, this module is its reader.

Each scenario is one CUDA C++ program with a host ``main``, built with nvcc (``build_command``), run
with ``--variant buggy`` or ``--variant fixed``. The recording (``coach.capture.sanitize``) runs
both variants plain (their own check against a reference: the symptom) and under the scenario's
compute-sanitizer tool (the evidence), plus any extra runs the scenario lists, such as the buggy
variant with ``CUDA_LAUNCH_BLOCKING=1``. ``coach run`` then walks through it from the recording.

The lines the bug lives on are named by text (``expected.lines``): each snippet must match exactly
one line of the buggy kernel (inside ``namespace buggy { ... }`` where the program has one, else of
the whole file), a line equal to it (spaces aside) before lines containing it, so the line numbers
follow the source when it is edited.

Only the standard library is used: the capture reads these files on the GPU machine.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coach import scenarios
from coach.analyze.findings import BugClass
from coach.errors import CoachError, InputError
from coach.scenarios import FOLDER_RE, LEVELS, SCENARIO_FILE, Fix, Rubric
from coach.scenarios import _Fields as Fields  # the same typed, error-naming getters as the performance format

KIND = "correctness"
VARIANTS = ("buggy", "fixed")
SANITIZER_TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")
#: How the bug is found: a compute-sanitizer tool; the launches made synchronous and checked (the
#: tool then names the line); or a float64 reference (no tool can see it).
FOUND_WITH = ("sanitizer", "launch-checks", "float64-reference")
#: The target the recording builds for (the H200) and the options every build uses: -lineinfo for
#: source lines in the reports without changing the optimised code, -rdynamic for host function
#: names in their backtraces.
ARCH = "sm_90"
NVCC_OPTIONS = ("-std=c++17", "-O3", "-lineinfo", "-Xcompiler", "-rdynamic")
DEFAULT_TIMEOUT_S = 120.0
NAME_RE = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")
ENV_RE = re.compile(r"^[A-Z_][A-Z0-9_]*$")


@dataclass(frozen=True)
class Run:
    """One run of the recording: a variant, plain or under a compute-sanitizer tool."""

    name: str  # "buggy", "fixed", "buggy-racecheck", "buggy-launch-blocking", ...
    variant: str
    tool: str | None  # a compute-sanitizer tool, or None for a plain run
    args: tuple[str, ...] = ()  # program arguments beyond --variant
    env: Mapping[str, str] = None  # type: ignore[assignment]
    tool_options: tuple[str, ...] = ()  # compute-sanitizer options beyond --tool

    def __post_init__(self) -> None:
        if self.env is None:
            object.__setattr__(self, "env", {})

    @property
    def key(self) -> str:
        """The run's name as a placeholder prefix: 'buggy-racecheck' -> 'buggy_racecheck'."""
        return self.name.replace("-", "_")


@dataclass(frozen=True)
class CorrectnessScenario:
    id: str
    number: int
    slug: str
    folder: Path
    title: str
    level: str
    tool: str  # the compute-sanitizer tool recorded on both variants
    found_with: str
    symptom: str
    question: str
    hints: tuple[str, ...]
    source: Path  # the program's .cu file (absolute)
    args: tuple[str, ...]  # arguments every run passes
    timeout_s: float
    error_class: BugClass
    first_rule: str  # the rule that must rank first on the buggy variant's report
    kernel: str  # the kernel the report must blame (its name without namespace)
    lines: tuple[str, ...]  # snippets of the buggy lines
    planted: Mapping[str, int]  # snippet -> its line number in the source
    fix: Fix
    rubric: Rubric
    runs: tuple[Run, ...]

    kind = KIND

    @property
    def path(self) -> Path:
        return self.folder / SCENARIO_FILE

    @property
    def narrative_path(self) -> Path:
        return self.folder / scenarios.NARRATIVE_FILE

    @property
    def planted_lines(self) -> list[int]:
        return sorted(set(self.planted.values()))

    @property
    def binary_name(self) -> str:
        return self.source.stem

    def build_command(self, output: str | Path, nvcc: str = "nvcc", arch: str = ARCH) -> list[str]:
        """nvcc's argument list that builds the program (both variants: one binary)."""
        return [nvcc, f"-arch={arch}", *NVCC_OPTIONS, "-o", str(output), str(self.source)]

    def run(self, name: str) -> Run:
        for r in self.runs:
            if r.name == name:
                return r
        raise KeyError(name)


# --------------------------------------------------------------------------------------------
# Finding and loading
# --------------------------------------------------------------------------------------------


def discover(root: str | Path | None = None) -> list[Path]:
    return scenarios.discover(root, KIND)


def all_scenarios(root: str | Path | None = None) -> list[CorrectnessScenario]:
    return [load(d) for d in discover(root)]


def is_correctness(ident: str, root: str | Path | None = None) -> bool:
    """Whether ``ident`` names a correctness scenario (an id that is not one raises nothing here)."""
    try:
        sid = scenarios.normalise_id(ident)
    except CoachError:
        return False
    return any(FOLDER_RE.match(d.name).group(1) == sid for d in discover(root))  # type: ignore[union-attr]


def find(ident: str, root: str | Path | None = None) -> CorrectnessScenario:
    sid = scenarios.normalise_id(ident)
    folders = discover(root)
    for d in folders:
        if FOLDER_RE.match(d.name).group(1) == sid:  # type: ignore[union-attr]
            return load(d)
    known = ", ".join(FOLDER_RE.match(d.name).group(1) for d in folders) or "none"  # type: ignore[union-attr]
    raise CoachError(f"unknown correctness scenario '{sid}'; known: {known}")


def load(path: str | Path) -> CorrectnessScenario:
    p = Path(path)
    folder = p if p.is_dir() else p.parent
    file = folder / SCENARIO_FILE
    if not file.is_file():
        raise InputError(file, "is missing (every scenario folder holds a scenario.toml)")
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise InputError(file, f"is not valid TOML ({err})") from None
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(file, f"cannot be read ({err})") from None
    return _scenario(Fields(file, data), folder.resolve())


def _scenario(f: Fields, folder: Path) -> CorrectnessScenario:
    m = FOLDER_RE.match(folder.name)
    if not m:
        raise InputError(folder, "is not named scenario-NN-<slug> (lower-case words joined by '-')")
    if f.choice("kind", scenarios.KINDS) != KIND:
        raise f.error("kind", f"must be '{KIND}' here")
    sid = f.text("id")
    if sid != m.group(1):
        raise f.error("id", f"'{sid}' does not match the folder name {folder.name}")
    tool = f.choice("tool", SANITIZER_TOOLS)
    found_with = f.choice("found_with", FOUND_WITH, "sanitizer")

    prog = f.table("program")
    source_name = prog.text("source")
    source = (folder / source_name).resolve()
    if folder.resolve() not in source.parents or source.suffix != ".cu":
        raise prog.error("source", f"'{source_name}' must be a .cu file inside the scenario folder")
    if not source.is_file():
        raise prog.error("source", f"'{source_name}' does not exist in {folder.name}")
    args = prog.texts("args", required=False, nonempty=False)
    timeout_s = prog.number("timeout_s", DEFAULT_TIMEOUT_S, minimum=1)
    prog.done()

    expected = f.table("expected")
    error_text = expected.text("error_class")
    try:
        error_class = BugClass(error_text)
    except ValueError:
        raise expected.error("error_class", f"'{error_text}' is not a correctness class (one of "
                                            f"{', '.join(b.value for b in BugClass)})") from None
    first_rule = expected.text("first_rule")
    if not scenarios.RULE_ID_RE.match(first_rule):
        raise expected.error("first_rule", f"'{first_rule}' is not a rule id (lower-case words joined by '-')")
    kernel = expected.text("kernel")
    lines = expected.texts("lines")
    planted = _planted(expected, source, lines)
    expected.done()

    fix_t = f.table("fix")
    fix = Fix(summary=fix_t.text("summary"), details=fix_t.text("details"),
              wrong_fix=fix_t.text("wrong_fix", "", required=False) or "")
    fix_t.done()
    rub = f.table("rubric")
    rubric = Rubric(strong=rub.texts("strong"), red_flags=rub.texts("red_flags"))
    rub.done()

    runs = [Run("buggy", "buggy", None), Run("fixed", "fixed", None),
            Run(f"buggy-{tool}", "buggy", tool), Run(f"fixed-{tool}", "fixed", tool)]
    if "runs" in f.data:
        for extra in f.tables("runs"):
            runs.append(_run(extra))
    names = [r.name for r in runs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise f.error("runs", f"two runs are named '{dupes[0]}' (the four standard runs are {', '.join(names[:4])})")

    scenario = CorrectnessScenario(
        id=sid, number=int(m.group(2)), slug=m.group(3), folder=folder, title=f.text("title"),
        level=f.choice("level", LEVELS), tool=tool, found_with=found_with, symptom=f.text("symptom"),
        question=f.text("question"), hints=f.texts("hints"), source=source, args=args, timeout_s=timeout_s,
        error_class=error_class, first_rule=first_rule, kernel=kernel, lines=lines, planted=planted, fix=fix,
        rubric=rubric, runs=tuple(runs))
    f.done()
    return scenario


def _run(f: Fields) -> Run:
    name = f.text("name")
    if not NAME_RE.match(name):
        raise f.error("name", f"'{name}' is not a run name (lower-case words joined by '-')")
    variant = f.choice("variant", VARIANTS)
    tool = f.choice("tool", ("none", *SANITIZER_TOOLS), "none")
    env_t = f.table("env", required=False)
    env = {}
    for key, value in env_t.data.items():
        if not ENV_RE.match(key) or not isinstance(value, str):
            raise env_t.error(key, "must be an environment variable NAME = \"text\"")
        env[key] = value
        env_t.seen.add(key)
    run = Run(name, variant, None if tool == "none" else tool, f.texts("args", required=False, nonempty=False), env,
              f.texts("tool_options", required=False, nonempty=False))
    if run.tool is None and run.tool_options:
        raise f.error("tool_options", "apply only to a run under a compute-sanitizer tool")
    f.done()
    return run


def buggy_region(text: str) -> tuple[int, int]:
    """The 1-based line range of ``namespace buggy { ... }`` in a source, or the whole file."""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if re.match(r"^\s*namespace\s+buggy\s*\{", ln)), None)
    if start is None:
        return 1, len(lines)
    end = next((i for i in range(start + 1, len(lines)) if re.match(r"^\}\s*//\s*namespace\s+buggy\b", lines[i])),
               len(lines) - 1)
    return start + 1, end + 1


def _planted(f: Fields, source: Path, snippets: tuple[str, ...]) -> dict[str, int]:
    text = source.read_text(encoding="utf-8")
    first, last = buggy_region(text)
    lines = text.splitlines()
    out = {}
    for i, snippet in enumerate(snippets):
        # A line that is the snippet (spaces aside) wins over lines that merely contain it: the
        # barrier inside a branch is "__syncthreads();", the one before it has a comment after it.
        hits = [n for n in range(first, last + 1) if lines[n - 1].strip() == snippet]
        hits = hits or [n for n in range(first, last + 1) if snippet in lines[n - 1]]
        if len(hits) != 1:
            where = "the buggy namespace" if (first, last) != (1, len(lines)) else "the file"
            raise f.error(f"lines[{i}]", f"'{snippet}' matches {len(hits)} lines of {where} in {source.name}, "
                                         "not exactly one")
        out[snippet] = hits[0]
    return out


# --------------------------------------------------------------------------------------------
# Text
# --------------------------------------------------------------------------------------------


def static_values(scenario: CorrectnessScenario) -> dict[str, Any]:
    """What the scenario's text may name without a recording: the planted lines and the kernel."""
    lines = scenario.planted_lines
    return {"kernel": scenario.kernel, "source": scenario.source.name, "bug_line": lines[0] if lines else None,
            "bug_lines": ", ".join(str(n) for n in lines), "tool": scenario.tool}
