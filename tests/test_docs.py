"""The README and the guides say what runs: every link between the pages resolves (a file, and a heading where the
link names one), and every command in their ``console`` blocks is one the project still takes — run as written where
the tiny model can run it (the README's three journeys end to end: tasks profiled, priced, trained, predicted,
exported, served), else its flags checked against the program's own ``--help`` (GLUE data, a GPU, a database, an
hour of training), and every file of the repository it names present."""

from __future__ import annotations

import re
import shlex
import shutil
import sys
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDES = sorted((ROOT / "docs").glob("*.md"))
#: the pages whose commands are checked: the README, every guide, the example's own page
PAGES = [ROOT / "README.md", *GUIDES, ROOT / "examples" / "tasks" / "README.md"]
#: the pages whose links are checked: those, and the benchmarks' figures
LINKED = [*PAGES, ROOT / "BENCHMARKS.md"]
#: shell lines a page shows that are not the project's programs: set-up, a database's own tools
NOT_OURS = {"export", "set", "sudo", "cd"}
#: a file of the repository, as a command names it
REPO_PATH = re.compile(r"^(?:examples|benchmarks|docs|pals_core|explorer|studies|tests)/[\w./-]*$")


def scripts() -> dict[str, str]:
    """``pals-*`` → ``module:function``, as pyproject.toml installs them."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]


def prose(text: str) -> str:
    """The page without its fenced blocks and inline code (a link inside code is an example, not a link)."""
    text = re.sub(r"(?ms)^```.*?^```", "", text)
    return re.sub(r"`[^`\n]*`", "", text)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", "")).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"(?ms)^```.*?^```", "", page.read_text(encoding="utf-8"))
    return {slug(m) for m in re.findall(r"(?m)^#{1,6} +(.+?) *$", text)}


def links(page: Path) -> list[str]:
    return re.findall(r"\[[^\]]*\]\(([^)\s]+)\)", prose(page.read_text(encoding="utf-8")))


@dataclass(frozen=True)
class Command:
    page: Path
    line: str  # as shown, after "$ "

    @property
    def argv(self) -> list[str]:
        """The words, without the shell's comment, a leading VAR=value and the checkout's ``.venv/bin/``; ``accelerate
        launch -m pals_core.cli.train`` is pals-train."""
        words = shlex.split(self.line, comments=True)
        while words and re.match(r"^[A-Z_]+=", words[0]):
            words = words[1:] or ["set"]  # VAR=value alone: the shell's
        if words[:3] == ["accelerate", "launch", "-m"]:
            module = words[3]
            words = [next(k for k, v in scripts().items() if v.split(":")[0] == module), *words[4:]]
        if words and words[0].startswith(".venv/bin/"):
            words[0] = words[0][len(".venv/bin/") :]
        return words

    def __str__(self) -> str:
        return f"{self.page.relative_to(ROOT)}: $ {self.line}"


def commands(page: Path) -> list[Command]:
    found = []
    for block in re.findall(r"(?ms)^```console\n(.*?)^```", page.read_text(encoding="utf-8")):
        found += [Command(page, line[2:]) for line in block.splitlines() if line.startswith("$ ")]
    return found


ALL = [c for page in PAGES for c in commands(page)]


# --- links ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("page", LINKED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_between_the_pages_resolves(page):
    broken = []
    for target in links(page):
        if re.match(r"^[a-z]+:", target):  # http(s), mailto: outside the repository
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and anchor not in anchors(file):
            broken.append(f"{target}: no heading '{anchor}' in {file.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}: {broken}"


def test_the_readme_leads_to_every_guide_and_shows_the_explorer():
    readme = ROOT / "README.md"
    linked = {(ROOT / t.partition("#")[0]).resolve() for t in links(readme) if not re.match(r"^[a-z]+:", t)}
    assert set(GUIDES) <= linked, sorted(str(g.relative_to(ROOT)) for g in set(GUIDES) - linked)
    shot = next(t for t in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", readme.read_text()) if t.endswith(".png"))
    assert (ROOT / shot).stat().st_size < 300_000  # a screenshot, committed small
    assert len(readme.read_text().splitlines()) <= 250  # a first read


# --- commands ------------------------------------------------------------------------------------------------------


def test_the_pages_show_commands_and_each_is_a_program_of_the_project():
    assert len(ALL) > 40 and {c.page for c in ALL} >= {ROOT / "README.md", ROOT / "docs" / "calculator.md"}
    ours = set(scripts())
    strangers = [str(c) for c in ALL if c.argv[0] not in ours | NOT_OURS | {"python", "head", "cat"}]
    assert not strangers, strangers


def _main(program: str):
    module, function = scripts()[program].split(":")
    return getattr(import_module(module), "main" if function == "console" else function)


def _help(program: str, argv: list[str], here, tmp_path) -> str:
    """The program's ``--help`` (a subcommand's, for ``pals-study run``, ``pals-runs list`` …)."""
    sub = [argv[1]] if program in ("pals-study", "pals-runs") and len(argv) > 1 and not argv[1].startswith("-") else []
    done = here(_main(program), *sub, "--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow  # imports each program (torch, optuna)
def test_every_shown_flag_is_one_its_program_takes_and_every_repository_file_it_names_is_there(
    here, tmp_path, monkeypatch
):
    monkeypatch.setenv("COLUMNS", "200")
    helps: dict[tuple, str] = {}
    wrong = []
    for command in ALL:
        argv = command.argv
        for word in argv[1:]:
            path = word.split("=", 1)[-1]
            if REPO_PATH.match(path) and not (ROOT / path).exists():
                wrong.append(f"{command}: no file {path}")
        if argv[0] not in scripts():
            continue
        key = (argv[0], argv[1] if len(argv) > 1 and argv[0] in ("pals-study", "pals-runs") else None)
        if key not in helps:
            helps[key] = _help(argv[0], argv, here, tmp_path)
        for word in argv[1:]:
            flag = word.split("=", 1)[0]
            if flag.startswith("--") and not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", helps[key]):
                wrong.append(f"{command}: {' '.join(k for k in key if k)} takes no {flag}")
    assert not wrong, "\n".join(wrong)


#: what the tiny model changes in a shown training command: the same flags, then a random tiny BERT for a few steps
TINY = ["--model", "tiny", "--steps", "4", "--eval-every", "2", "--threads", "1"]


def _how(command: Command, sandbox: Path) -> str:
    """``run`` (as written), ``tiny`` (pals-train on a tasks file, with TINY after it) or ``help`` (flags checked)."""
    argv = command.argv
    words = " ".join(argv)
    if "..." in argv or "path/to" in words or "$" in words or argv[0] in NOT_OURS | {"pals-calibrate", "pals-study"}:
        return "help"  # a placeholder, a database, this machine measured for minutes
    if argv[0] in ("head", "cat"):
        return "run" if (sandbox / argv[-1]).exists() else "help"
    if argv[0] == "python":
        return "run" if REPO_PATH.match(argv[1]) else "help"
    if argv[0] == "pals-train":
        return (
            "tiny" if "--tasks-file" in argv and (sandbox / argv[argv.index("--tasks-file") + 1]).exists() else "help"
        )
    if argv[0] in ("pals-predict", "pals-export"):  # a run the page trained before, and an input that is there
        inputs = [argv[i + 1] for i, w in enumerate(argv) if w == "--input"]
        there = (sandbox / argv[1]).is_dir() and all((sandbox / i).exists() for i in inputs)
        return "run" if there else "help"
    if argv[0] == "pals-runs":
        return "run" if argv[1:2] == ["list"] else "help"
    if argv[0] == "pals-budget" and "--device" in argv and argv[argv.index("--device") + 1] == "local":
        return "help"  # needs pals-calibrate's profile of this machine
    return "run" if argv[0] in ("pals-budget", "pals-tasks") else "help"


@pytest.mark.slow  # trains, predicts and exports a tiny model
def test_the_commands_the_tiny_model_can_run_run_as_shown(here, tmp_path, monkeypatch):
    """In a folder holding the example tasks and the committed results: the README's commands in order, then each
    guide's — pals-budget and pals-tasks as written, pals-train on the example's tasks file with the tiny model for a
    few steps, pals-predict and pals-export on the run so made. Each exits 0."""
    sandbox = tmp_path / "checkout"
    shutil.copytree(ROOT / "examples", sandbox / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    (sandbox / "benchmarks").symlink_to(ROOT / "benchmarks")
    monkeypatch.setenv("PALS_RUNS_DIR", str(sandbox / "runs"))
    monkeypatch.setenv("PALS_CACHE_DIR", str(tmp_path / "cache"))
    ran, failed, seen = [], [], set()
    for command in ALL:
        how, argv = _how(command, sandbox), command.argv
        if how == "help":
            continue
        if tuple(argv) in seen:  # the same command on another page: run once (its --out is there now)
            ran.append(command)
            continue
        seen.add(tuple(argv))
        if argv[0] in ("head", "cat"):
            assert (sandbox / argv[-1]).read_text(encoding="utf-8").strip()
        elif argv[0] == "python":
            import runpy

            monkeypatch.chdir(sandbox)
            monkeypatch.setattr(sys, "argv", argv[1:])
            with pytest.raises(SystemExit) as exited:
                runpy.run_path(str(sandbox / argv[1]), run_name="__main__")
            assert exited.value.code == 0, f"{command}: exit {exited.value.code}"
        else:
            extra = TINY + (["--no-progress"] if argv[0] == "pals-train" else []) if how == "tiny" else []
            done = here(_main(argv[0]), *argv[1:], *extra, cwd=sandbox)
            if done.returncode != 0 or "Traceback" in done.stderr:
                failed.append(f"{command}: exit {done.returncode}: {done.stderr.strip()[-400:]}")
        ran.append(command)
    assert not failed, "\n".join(failed)
    readme = [c for c in ALL if c.page.name == "README.md" and c.page.parent == ROOT]
    assert set(readme) <= set(ran), [str(c) for c in readme if c not in ran]  # the front door runs whole
    assert (sandbox / "runs" / "mine" / "summary.json").exists() and (sandbox / "exported" / "model.onnx").exists()
    assert len(ran) >= 20, [str(c) for c in ran]


# --- what a thing is for, not who asked for it ----------------------------------------------------------------------


def test_code_docs_and_benchmarks_name_no_issue():
    """The repository's text says what a thing is for, not which issue asked for it: no issue cited by its number in
    code, tests, docs, BENCHMARKS.md or benchmarks (the committed results under benchmarks/results keep their names)."""
    found = []
    for path in sorted(ROOT.rglob("*")):
        rel = path.relative_to(ROOT)
        if (
            not path.is_file()
            or path.suffix not in {".py", ".md", ".sh", ".toml", ".yaml", ".cfg"}
            or rel.parts[0] in {".venv", ".git", "benchmarks/results", "test-artifacts", "runs", "studies_out"}
            or rel.parts[:2] == ("benchmarks", "results")
            or any(p.startswith(".") or p == "__pycache__" for p in rel.parts)
        ):
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if re.search(r"(?i)\bissue ?#?\d+", line):
                found.append(f"{rel}:{n}: {line.strip()[:120]}")
    assert not found, "\n".join(found)
