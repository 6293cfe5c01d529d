"""`python -m p4client apply ...`: push a netc WriteRequest to one switch.

    PYTHONPATH=targets python -m p4client apply --address HOST:9559 --device-id 1 \\
        --switch tor1 --file out/p4/tor1.txtpb [--set-pipeline --device-config netc.json]

Reconciles the switch to exactly the file's state (read, diff, write), all or
nothing; exit 0 on success, 1 if the switch rejected an update (rolled back),
2 on usage/connection errors.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from google.protobuf import text_format
from p4.v1 import p4runtime_pb2

from .client import P4ClientError, P4RuntimeClient, WriteFailed
from .p4info import DEFAULT, load


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="p4client")
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("apply", help="reconcile a switch to a netc p4/<switch>.txtpb")
    a.add_argument("--address", required=True)
    a.add_argument("--device-id", type=int, default=1)
    a.add_argument("--election-id", type=int, default=1)
    a.add_argument("--switch", default="")
    a.add_argument("--file", required=True, type=Path)
    a.add_argument("--p4info", type=Path, default=DEFAULT)
    a.add_argument("--set-pipeline", action="store_true")
    a.add_argument("--device-config", type=Path)
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
            if args.set_pipeline:
                cfg = args.device_config.read_bytes() if args.device_config else b""
                c.set_pipeline(ix.info, cfg)
            n = c.apply(desired)
    except WriteFailed as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except P4ClientError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"switch `{name}`: {n} updates applied", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
