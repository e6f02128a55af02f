"""Running coach's CLI in-process from a test."""
from __future__ import annotations


def run_cli(argv, capsys) -> tuple[int, str, str]:
    """``coach ARGV`` in this process: its exit code (0 when it returns), stdout and stderr."""
    from coach.cli import main

    try:
        main(argv)
        code = 0
    except SystemExit as e:
        code = e.code or 0
    out, err = capsys.readouterr()
    return code, out, err
