"""``python -m coach.capture {doctor,profile,record,sanitize}``: the GPU-machine front end, standard library only.

The same functions back ``coach doctor``, ``coach profile`` and ``coach record``; this entry point
exists for machines where coach's own dependencies (polars, ...) are not installed:

    PYTHONPATH=. python3 -m coach.capture doctor
    PYTHONPATH=. python3 -m coach.capture profile --nsys -- python3 train.py
    PYTHONPATH=. python3 -m coach.capture record scenario-01 scenario-15 --out /tmp/raw
    PYTHONPATH=. python3 -m coach.capture sanitize --all --out /tmp/raw-sanitizer
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from coach.errors import CoachError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m coach.capture", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    d = sub.add_parser("doctor", help="what this machine can do, and what to install")
    d.add_argument("--json", action="store_true", help="write the report as JSON")
    d.add_argument("--quick", action="store_true", help="do not test-run nsys")

    p = sub.add_parser("profile", help="run a command under nsys and/or ncu")
    p.add_argument("--nsys", action="store_true", help="Nsight Systems (the default when --ncu is not given)")
    p.add_argument("--ncu", metavar="SET", help="Nsight Compute with this section set (e.g. full, basic)")
    p.add_argument("--kernel", metavar="REGEX", help="profile only kernels whose name matches (ncu)")
    p.add_argument("--launch-count", type=int, metavar="N", help="profile at most N launches (ncu)")
    p.add_argument("--out", type=Path, default=Path("coach-profile"), help="new folder for the reports")
    p.add_argument("--timeout", type=float, default=600.0, metavar="S", help="limit per profiled run, seconds")
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- COMMAND ARGS...")

    r = sub.add_parser("record", help="run scenarios plain and under the profilers")
    r.add_argument("scenarios", nargs="*", help="scenario ids (scenario-01 or 01)")
    r.add_argument("--all", action="store_true", help="every scenario")
    r.add_argument("--only", metavar="LIST", help="comma-separated ids, e.g. 01,02,15")
    r.add_argument("--out", type=Path, required=True, help="folder for the raw reports")
    r.add_argument("--skip-existing", action="store_true", help="skip scenarios already recorded in --out")
    r.add_argument("--time-budget", type=float, metavar="S", help="start no scenario after S seconds")
    r.add_argument("--no-nsys", action="store_true")
    r.add_argument("--no-ncu", action="store_true")

    z = sub.add_parser("sanitize", help="run the correctness scenarios plain and under compute-sanitizer")
    z.add_argument("scenarios", nargs="*", help="correctness scenario ids (scenario-21 or 21)")
    z.add_argument("--all", action="store_true", help="every correctness scenario")
    z.add_argument("--out", type=Path, required=True, help="folder for the raw outputs")
    z.add_argument("--skip-existing", action="store_true", help="skip scenarios already recorded in --out")
    z.add_argument("--time-budget", type=float, metavar="S", help="start no scenario after S seconds")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "doctor":
            from coach.capture import doctor

            checks = doctor.run_checks(self_test=not args.quick)
            print(json.dumps(doctor.report(checks), indent=2) if args.json else doctor.format_text(checks))
        elif args.command == "profile":
            from coach.capture.profile import NcuOptions, profile

            cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
            ncu = NcuOptions(args.ncu, args.kernel, args.launch_count) if args.ncu else None
            files = profile(cmd, args.out, nsys=args.nsys or ncu is None, ncu=ncu, timeout=args.timeout)
            print("\n".join(str(f) for f in files))
        elif args.command == "sanitize":
            from coach.capture import sanitize
            from coach.capture.record import raise_for_failures

            chosen = sanitize.select(args.scenarios, all_=args.all)
            raise_for_failures(sanitize.record(chosen, args.out, skip_existing=args.skip_existing,
                                               time_budget_s=args.time_budget))
        else:
            from coach.capture.record import raise_for_failures, record, select

            chosen = select(args.scenarios, all_=args.all, only=args.only)
            raise_for_failures(record(chosen, args.out, nsys=not args.no_nsys, ncu=not args.no_ncu,
                                      skip_existing=args.skip_existing, time_budget_s=args.time_budget))
    except CoachError as err:
        print(f"coach: error: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("coach: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
