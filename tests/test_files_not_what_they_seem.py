"""`seed` and `export` meet files that are not what they seem: symlinks leading out of the
project, FIFOs, devices and huge files. Real files, real `pma-mcp` processes.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from pma_mcp.importers import project_docs
from tests.test_cli import assert_one_line_error, cli, cli_env

CANARY = "Q7kv-outside-the-project-canary"
SECRET_FILE = (
    "[default]\n"
    f"# {CANARY}\n"
    "aws_access_key_id = AKIAQ3EGRT5HNX2YLW7B\n"
    "aws_secret_access_key = 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\n"
)


def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "docs").mkdir(parents=True)
    (root / "README.md").write_text("# Acme\n\nThe billing API serves invoices over REST.\n")
    return root


def db_bytes(db: Path) -> bytes:
    return b"".join(p.read_bytes() for p in (db, Path(f"{db}-wal")) if p.exists())


# ------------------------------------------------------------------ seed


def test_seed_skips_a_symlink_that_leads_out_of_the_project(tmp_path: Path) -> None:
    root = project(tmp_path)
    outside = tmp_path / "home" / ".aws"
    outside.mkdir(parents=True)
    (outside / "credentials").write_text(SECRET_FILE)
    (root / "docs" / "setup.md").symlink_to(outside / "credentials")
    db = tmp_path / "store.db"

    proc = cli("seed", str(root), env=cli_env(db, tmp_path / "home"))

    assert proc.returncode == 0, proc.stderr
    assert "skipped docs/setup.md: a symlink to a file outside the project" in proc.stdout
    assert CANARY.encode() not in db_bytes(db)
    assert b"billing API" in db_bytes(db)  # the rest of the project was seeded


def test_seed_skips_a_docs_directory_linked_out_of_the_project(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "README.md").write_text("# Acme\n\nThe billing API serves invoices over REST.\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "notes.md").write_text(f"# Notes\n\n{CANARY} lives outside this project.\n")
    (root / "docs").symlink_to(elsewhere, target_is_directory=True)

    read = project_docs.read_sections(root)

    assert [s.source for s in read.skipped] == ["docs/notes.md"]
    assert all(CANARY not in s.text for s in read.sections)


def test_seed_follows_a_symlink_that_stays_inside(tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / "handbook").mkdir()
    (root / "handbook" / "ops.md").write_text(
        "# Ops\n\nDeploys happen every Tuesday morning through the release pipeline.\n")
    (root / "docs" / "ops.md").symlink_to(root / "handbook" / "ops.md")

    read = project_docs.read_sections(root)

    assert read.skipped == []
    assert any("every Tuesday" in s.text for s in read.sections)


def test_seed_does_not_block_on_a_fifo(tmp_path: Path) -> None:
    root = project(tmp_path)
    os.mkfifo(root / "docs" / "pipe.md")
    db = tmp_path / "store.db"

    proc = subprocess.run(  # a hang shows as the timeout, not as a timing assertion
        [sys.executable, "-m", "pma_mcp", "seed", str(root)], env=cli_env(db, tmp_path / "h"),
        capture_output=True, text=True, timeout=60, check=False,
    )

    assert proc.returncode == 0, proc.stderr
    assert b"billing API" in db_bytes(db)


def test_seed_reads_a_huge_file_bounded(tmp_path: Path) -> None:
    """A 1 GiB sparse file: the child's peak RSS stays far below the file's size (the old
    code read it whole), and the output says the file was cut."""
    root = project(tmp_path)
    huge = root / "docs" / "huge.md"
    with huge.open("wb") as handle:
        handle.write(b"# Huge\n\nThe first section of a generated reference manual.\n\n")
        handle.truncate(1 << 30)
    db = tmp_path / "store.db"
    probe = (
        "import json, resource, subprocess, sys\n"
        "proc = subprocess.run([sys.executable, '-m', 'pma_mcp', 'seed', sys.argv[1]],"
        " capture_output=True, text=True)\n"
        "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
        "print(json.dumps([proc.returncode, peak, proc.stdout, proc.stderr]))\n"
    )

    out = subprocess.run([sys.executable, "-c", probe, str(root)],
                         env=cli_env(db, tmp_path / "h"), capture_output=True, text=True,
                         check=True).stdout
    code, peak_kib, stdout, stderr = json.loads(out)

    assert code == 0, stderr
    assert int(peak_kib) < 300 * 1024, f"peak RSS {int(peak_kib) // 1024} MiB for a 1 GiB file"
    assert "cut docs/huge.md: 1,073,741,824 bytes, over the 2,000,000-byte cap" in stdout
    assert b"generated reference manual" in db_bytes(db)


def test_read_cap_keeps_the_head_of_a_large_file(tmp_path: Path) -> None:
    root = project(tmp_path)
    body = "# Big\n\n" + "".join(f"Paragraph {i} of the manual, long enough to count.\n\n"
                                  for i in range(60_000))
    (root / "docs" / "big.md").write_text(body)

    read = project_docs.read_sections(root)

    texts = "\n".join(s.text for s in read.sections if s.source == "docs/big.md")
    assert "Paragraph 0 of the manual" in texts
    assert "Paragraph 59999" not in texts
    assert len(texts) <= project_docs.MAX_FILE_BYTES + 10_000
    assert read.skipped == []
    (note,) = read.cut
    assert note.source == "docs/big.md" and "over the 2,000,000-byte cap" in note.reason


# ------------------------------------------------------------------ export


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    db = tmp_path / "store.db"
    environment = cli_env(db, tmp_path / "home", PMA_NAMESPACE="/home/dev/acme-api")
    doc = {"format": "pma-mcp-export", "version": 1, "memories": [
        {"id": f"{n + 1:032x}", "namespace": "/home/dev/acme-api",
         "content": f"Decision {n}: the nightly export retries at most five times.",
         "memory_type": "semantic", "token_count": 12, "created_at": 1_790_000_000 + n}
        for n in range(3)]}
    (tmp_path / "seed.json").write_text(json.dumps(doc))
    assert cli("import", str(tmp_path / "seed.json"), env=environment).returncode == 0
    return environment


def test_export_streams_into_a_fifo_and_leaves_it_a_fifo(
    env: dict[str, str], tmp_path: Path
) -> None:
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as handle:
            received.append(handle.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    proc = subprocess.run([sys.executable, "-m", "pma_mcp", "export", "-o", str(fifo)],
                          env=env, capture_output=True, text=True, timeout=60, check=False)
    if reader.is_alive():  # the old code renamed a file over the FIFO and never opened it
        with open(fifo, "wb"):
            pass
    reader.join(timeout=30)

    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert len(json.loads(received[0])["memories"]) == 3


def test_export_to_a_device_node_keeps_the_node(env: dict[str, str], tmp_path: Path) -> None:
    node = tmp_path / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o600, os.makedev(1, 3))  # a private /dev/null
    except PermissionError:
        pytest.skip("creating a device node needs root (CAP_MKNOD) on this machine")

    proc = cli("export", "-o", str(node), env=env)

    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISCHR(os.lstat(node).st_mode)
    assert node.read_bytes() == b""


def test_export_to_dev_stdout_streams(env: dict[str, str]) -> None:
    proc = cli("export", "-o", "/dev/stdout", env=env)

    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)["memories"]) == 3


def test_export_refuses_to_write_through_a_symlink(env: dict[str, str], tmp_path: Path) -> None:
    target = tmp_path / "important.json"
    target.write_text("keep me")
    link = tmp_path / "export.json"
    link.symlink_to(target)

    proc = cli("export", "-o", str(link), env=env)

    assert_one_line_error(proc, "is a symlink to", "--follow-symlinks")
    assert link.is_symlink() and target.read_text() == "keep me"

    proc = cli("export", "-o", str(link), "--follow-symlinks", env=env)

    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink()
    assert len(json.loads(target.read_text())["memories"]) == 3
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600


def test_export_replaces_a_regular_file_atomically_and_privately(
    env: dict[str, str], tmp_path: Path
) -> None:
    out = tmp_path / "backup.json"
    out.write_text("old")
    out.chmod(0o644)

    proc = cli("export", "-o", str(out), env=env)

    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(out.read_text())["memories"]) == 3
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".backup")) == []


@pytest.mark.parametrize("target", ["dir", "missing/out.json"])
def test_export_to_an_impossible_target_is_one_clear_error(
    env: dict[str, str], tmp_path: Path, target: str
) -> None:
    (tmp_path / "dir").mkdir()

    proc = cli("export", "-o", str(tmp_path / target), env=env)

    assert_one_line_error(proc, "directory" if target == "dir" else "does not exist")
