"""``gse info``: which build of the hot paths (compiled or pure Python) this process runs."""

import json

from gse import _build


def add_commands(sub):
    p = sub.add_parser("info", help="which build (compiled or pure Python) is active")
    p.add_argument("--json", action="store_true", help="print the state as JSON")
    return {"info": cmd_info}


def cmd_info(args):
    d = _build.info()
    print(json.dumps(d, indent=2) if args.json else _build.format_info(d))
    return 0 if d["consistent"] else 1
