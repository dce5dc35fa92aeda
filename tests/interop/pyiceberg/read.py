"""PyIceberg's reading of an interop table: the third opinion (tests/interop).

Usage: python read.py METADATA_FILE [METADATA_FILE ...]

For each metadata file (a table as one commit left it, read with
PyIceberg's StaticTable: no catalog) it prints, as one JSON object keyed by
the file, either {"columns": [...], "rows": [...]}: the rows of the current
snapshot projected to the top-level columns of primitive types whose JSON
is the same in Spark's and here (int, long, string, boolean), nulls left
out as Spark's JSON leaves them out; or {"unreadable": "..."}: why
PyIceberg cannot read it (it does not apply equality deletes, for one).
"""

import json
import sys

from pyiceberg.table import StaticTable
from pyiceberg.types import BooleanType, IntegerType, LongType, StringType

COMPARABLE = (IntegerType, LongType, StringType, BooleanType)


def read(location):
    try:
        table = StaticTable.from_metadata(location)
        columns = [f.name for f in table.schema().fields if isinstance(f.field_type, COMPARABLE)]
        if table.current_snapshot() is None:
            return {"columns": columns, "rows": []}
        rows = table.scan(selected_fields=tuple(columns)).to_arrow().to_pylist()
        return {"columns": columns, "rows": [{k: v for k, v in r.items() if v is not None} for r in rows]}
    except Exception as e:  # noqa: BLE001 - what PyIceberg refuses is the answer
        return {"unreadable": f"{type(e).__name__}: {e}"}


def main():
    json.dump({loc: read(loc) for loc in sys.argv[1:]}, sys.stdout)


if __name__ == "__main__":
    main()
