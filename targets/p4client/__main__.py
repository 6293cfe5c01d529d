"""`python -m p4client apply ...`: push a netc WriteRequest to one switch.

    PYTHONPATH=targets python -m p4client apply --address HOST:9559 --device-id 1 \\
        --switch tor1 --file out/p4/tor1.txtpb [--ensure-pipeline] [--device-config netc.json]
    PYTHONPATH=targets python -m p4client diff --address HOST:9559 --file out/p4/tor1.txtpb [--check-pipeline]

`apply` reconciles the switch to exactly the file's state (read, diff,
write), all or nothing; with `--ensure-pipeline` it first sets netc.p4's
pipeline when the switch has none (and refuses a switch running another
P4Info, writing nothing); `--set-pipeline` sets it unconditionally. `diff`
is the dry run: it prints the updates `apply` would send (`N updates
differ`, then one per line) and writes nothing; with `--check-pipeline` a
missing pipeline is one more line and another program's is an error (as
`apply --ensure-pipeline` would find). Exit 0 on success, 1 if the
switch rejected an update (rolled back), 2 on usage/connection errors, 3 if
the switch runs another program (nothing written; `netc status` reports the
switch as `foreign-program` rather than unreachable). The client exits by
itself (code 4) when the process that started it dies.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

from google.protobuf import text_format
from p4.v1 import p4runtime_pb2

from .client import ForeignPipeline, P4ClientError, P4RuntimeClient, WriteFailed
from .p4info import DEFAULT, load

# netc's rollout (runtime/deploy/src/rollout/push.rs) reads this code
EXIT_FOREIGN_PROGRAM = 3
# nobody reads it: the parent is gone
EXIT_PARENT_DIED = 4


def exit_with_parent(poll: float = 0.2) -> None:
    """Exit when the process that started us dies (it is `netc apply`/`status`,
    which may be killed -9 mid-push): a client left behind would keep a
    switch's primary arbitration and a stream open. Re-parenting changes our
    parent pid, which a daemon thread notices within `poll` seconds."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll)
        print("error: the process that started p4client died; stopping", file=sys.stderr)
        os._exit(EXIT_PARENT_DIED)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="p4client")
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("apply", help="reconcile a switch to a netc p4/<switch>.txtpb")
    d = sub.add_parser("diff", help="what apply would change (nothing is written)")
    for p in (a, d):
        p.add_argument("--address", required=True)
        p.add_argument("--device-id", type=int, default=1)
        p.add_argument("--election-id", type=int, default=1)
        p.add_argument("--switch", default="")
        p.add_argument("--file", required=True, type=Path)
        p.add_argument("--p4info", type=Path, default=DEFAULT)
    a.add_argument("--set-pipeline", action="store_true")
    a.add_argument("--ensure-pipeline", action="store_true")
    a.add_argument("--device-config", type=Path)
    d.add_argument("--check-pipeline", action="store_true",
                   help="count a missing pipeline; refuse a switch running another P4Info")
    args = ap.parse_args(argv)
    try:
        ix = load(args.p4info)
        desired = text_format.Parse(args.file.read_text(), p4runtime_pb2.WriteRequest())
    except (OSError, text_format.ParseError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    name = args.switch or args.file.stem
    try:
        with P4RuntimeClient(args.address, args.device_id, ix, name, (0, args.election_id)) as c:
            if args.cmd == "diff":
                changes = c.diff(desired, check_pipeline=args.check_pipeline)
                print(f"switch `{name}`: {len(changes)} updates differ", file=sys.stderr)
                for line in changes:
                    print(line)
                return 0
            # read only when sent: a moved program file matters only then
            def cfg() -> bytes:
                return args.device_config.read_bytes() if args.device_config else b""

            if args.set_pipeline:
                c.set_pipeline(ix.info, cfg())
            elif args.ensure_pipeline and c.ensure_pipeline(ix.info, cfg) == "set":
                print(f"switch `{name}`: forwarding pipeline set (netc.p4)", file=sys.stderr)
            n = c.apply(desired)
    except OSError as e:
        print(f"error: switch `{name}`: {e}", file=sys.stderr)
        return 2
    except ForeignPipeline as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_FOREIGN_PROGRAM
    except WriteFailed as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except P4ClientError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"switch `{name}`: {n} updates applied", file=sys.stderr)
    return 0


if __name__ == "__main__":
    exit_with_parent()
    sys.exit(main())
