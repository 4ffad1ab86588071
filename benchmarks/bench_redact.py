"""Secret redaction: shapes caught per class and false positives, beside the old rules.

    uv run python -m benchmarks.bench_redact [--locomo ../shared/bench/locomo_dev.json] [--show 5]

Caught: a corpus case (tests/hostile/secrets.jsonl) counts as caught when no 8-character piece
of its secret survives redaction. False positives: how many texts redaction changes at all,
on the LoCoMo dev conversations (every turn's text) and on this repository's README.md and
docs/*.md, where the right number is zero. Import time is measured in fresh processes.

The baseline is the redactor as it was before this rule set (commit BASELINE), loaded from git
in the same run, so both columns are measured on the same inputs by the same code.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType

from pma_mcp.core import redact
from tests.hostile import secret_corpus

ROOT = Path(__file__).resolve().parents[1]
BASELINE = "e20e9c5"  # the last commit with the hand-written rule list
DEFAULT_LOCOMO = ROOT.parent / "shared" / "bench" / "locomo_dev.json"

Redactor = Callable[[str], str]


OLD_PATH = Path(tempfile.gettempdir()) / f"pma_old_redact_{BASELINE}.py"


def baseline() -> Redactor | None:
    """The old `redact` from git (written to OLD_PATH), or None without the history."""
    try:
        source = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{BASELINE}:pma_mcp/redact.py"],
            check=True, capture_output=True, text=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    OLD_PATH.write_text(source, "utf-8")
    spec = importlib.util.spec_from_file_location("old_redact", OLD_PATH)
    assert spec is not None and spec.loader is not None
    module: ModuleType = importlib.util.module_from_spec(spec)
    sys.modules["old_redact"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return lambda text: str(module.redact(text).text)


def current(text: str) -> str:
    return redact.redact(text).text


def locomo_turns(path: Path) -> list[str]:
    samples = json.loads(path.read_text("utf-8"))
    turns: list[str] = []
    for sample in samples:
        conversation = sample["conversation"]
        for key, value in conversation.items():
            if key.startswith("session_") and isinstance(value, list):
                turns.extend(str(turn.get("text", "")) for turn in value)
    return turns


def repo_docs() -> dict[str, str]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return {str(f.relative_to(ROOT)): f.read_text("utf-8") for f in files}


def caught(run: Redactor, cases: list[dict[str, str]]) -> dict[str, tuple[int, int]]:
    per_class: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    for case in cases:
        stats = per_class[case["class"]]
        stats[1] += 1
        stats[0] += secret_corpus.leaked(case["secret"], run(case["text"])) is None
    return {k: (v[0], v[1]) for k, v in sorted(per_class.items())}


def changed(run: Redactor, texts: Iterable[str]) -> list[tuple[str, str]]:
    return [(t, out) for t in texts if (out := run(t)) != t]


def import_ms(code: str, runs: int = 9) -> float:
    """Median wall time of `code` in a fresh interpreter, minus a bare interpreter's start."""
    def once(snippet: str) -> float:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", snippet], check=True)
        return time.perf_counter() - start

    bare = statistics.median(once("pass") for _ in range(runs))
    return (statistics.median(once(code) for _ in range(runs)) - bare) * 1000


def _row(name: str, new: tuple[int, int], old: tuple[int, int] | None) -> str:
    old_text = f"{old[0]:>4} / {old[1]:<4}" if old else "   n/a     "
    return f"  {name:<16} {new[0]:>4} / {new[1]:<4}   {old_text}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO)
    parser.add_argument("--show", type=int, default=5, help="examples to print per failure kind")
    args = parser.parse_args()

    old = baseline()
    cases = secret_corpus.load()
    new_caught = caught(current, cases)
    old_caught = caught(old, cases) if old else {}
    print(f"== shapes caught / tried ({len(cases)} cases in tests/hostile/secrets.jsonl)")
    print(f"  {'class':<16} {'now':>11}   {'before (' + BASELINE + ')':>11}")
    for klass, stats in new_caught.items():
        print(_row(klass, stats, old_caught.get(klass)))
    total = (sum(v[0] for v in new_caught.values()), len(cases))
    old_total = (sum(v[0] for v in old_caught.values()), len(cases)) if old else None
    print(_row("all", total, old_total))
    missed = [c for c in cases if secret_corpus.leaked(c["secret"], current(c["text"]))]
    for case in missed[: args.show]:
        print(f"    missed {case['id']}: {current(case['text'])[:160]!r}")

    docs = repo_docs()
    sources: list[tuple[str, list[str]]] = [("repo docs (files)", list(docs.values()))]
    if args.locomo.exists():
        sources.insert(0, ("LoCoMo dev turns", locomo_turns(args.locomo)))
    else:
        print(f"\n(LoCoMo dev split not found at {args.locomo}; skipped)")
    print("\n== false positives: texts changed by redaction (want 0)")
    for name, texts in sources:
        now = changed(current, texts)
        before = len(changed(old, texts)) if old else "n/a"
        print(f"  {name:<20} now {len(now):>4} of {len(texts):,}   before {before}")
        for text, out in now[: args.show]:
            print(f"    {text[:100]!r}\n      -> {out[:100]!r}")

    start = time.perf_counter()
    size = sum(len(t) for _, texts in sources for t in texts)
    for _, texts in sources:
        for text in texts:
            current(text)
    elapsed = time.perf_counter() - start
    old_elapsed = None
    if old:
        start = time.perf_counter()
        for _, texts in sources:
            for text in texts:
                old(text)
        old_elapsed = time.perf_counter() - start
    print(f"\n== speed: {size / 1e6:.2f} MB of ordinary text in {elapsed * 1000:.0f} ms"
          + (f" (before: {old_elapsed * 1000:.0f} ms)" if old_elapsed is not None else ""))
    new_import = import_ms("import pma_mcp.core.redact; pma_mcp.core.redact.redact('token=x1')")
    line = f"   import + first call, fresh process (median of 9): {new_import:.1f} ms"
    if old:
        old_import = import_ms(f"import runpy; runpy.run_path({str(OLD_PATH)!r})")
        line += f" (before: {old_import:.1f} ms)"
    print(line)


if __name__ == "__main__":
    main()
