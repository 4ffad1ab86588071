"""What resolving the team namespace and author costs a hook, beside the path namespace alone.

    uv run python -m benchmarks.bench_identity [--calls 2000]

Every hook builds its Settings once (`Settings.from_env`); since team use that includes
finding the git repository above the project directory and parsing its config and the global
git config (no subprocess). Measured in process, p50 and p95 per call over `--calls` calls, in
four places made for the run: a folder outside git, the root of a checkout, 12 folders below
it, and a linked worktree. The baseline is the path namespace alone (`resolve_namespace`, the
rule before team use) on the same folders in the same run; `git config` in a subprocess is
shown for what parsing avoids.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pma_mcp.config import Settings, resolve_namespace, team_settings


def _git(cwd: Path, *args: str, env: dict[str, str]) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)


def _places(root: Path, env: dict[str, str]) -> dict[str, Path]:
    plain = root / "plain" / "project"
    plain.mkdir(parents=True)
    repo = root / "api"
    repo.mkdir()
    _git(repo, "init", "-q", env=env)
    _git(repo, "remote", "add", "origin", "git@github.com:Acme/api.git", env=env)
    _git(repo, "config", "user.email", "alice@acme.example", env=env)
    _git(repo, "-c", "user.name=A", "commit", "-q", "--allow-empty", "-m", "one", env=env)
    deep = repo.joinpath(*(f"d{i}" for i in range(12)))
    deep.mkdir(parents=True)
    _git(repo, "worktree", "add", "-q", str(root / "api-feature"), env=env)
    return {"outside git": plain, "checkout root": repo, "12 folders down": deep,
            "linked worktree": root / "api-feature"}


def _timed(call: Callable[[], object], calls: int) -> tuple[float, float]:
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1e6)
    samples.sort()
    return statistics.median(samples), samples[int(0.95 * (len(samples) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        home = root / "home"
        home.mkdir()
        (home / ".gitconfig").write_text("[user]\n\temail = alice@home.example\n"
                                         "[core]\n\tautocrlf = input\n")
        env = {"HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", "PATH": os.environ["PATH"]}
        places = _places(root, env)
        print("µs per call, p50 (p95)")
        print(f"{'where':<16} {'path ns (before)':>17} {'git ns + author':>17} "
              f"{'Settings.from_env':>18} {'one `git config`':>17}   namespace")
        for name, folder in places.items():
            cwd = str(folder)
            base = _timed(functools.partial(resolve_namespace, env, cwd=cwd), args.calls)
            team = _timed(functools.partial(team_settings, env, cwd=cwd, path_namespace=cwd),
                          args.calls)
            whole = _timed(functools.partial(Settings.from_env, env, cwd=cwd), args.calls)
            spawn = _timed(functools.partial(
                subprocess.run, ["git", "config", "--get", "remote.origin.url"], cwd=folder,
                env=env, capture_output=True, check=False), max(args.calls // 50, 10))
            ns = Settings.from_env(env, cwd=cwd).namespace
            cells = [f"{p50:.0f} ({p95:.0f})" for p50, p95 in (base, team, whole, spawn)]
            print(f"{name:<16} {cells[0]:>17} {cells[1]:>17} {cells[2]:>18} {cells[3]:>17}"
                  f"   {ns}")


if __name__ == "__main__":
    main()
