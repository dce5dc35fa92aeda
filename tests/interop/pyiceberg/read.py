"""PyIceberg's reading of an interop table: the third opinion (tests/interop).

Usage: python read.py METADATA_FILE [METADATA_FILE ...]

For each metadata file (a table as one commit left it, read with
PyIceberg's StaticTable: no catalog) it prints, as one JSON object keyed by
the file, either {"columns": [...], "rows": [...]}: the rows of the current
snapshot projected to the top-level columns of primitive types whose JSON
is the same in Spark's and here (int, long, string, boolean), nulls left
out as Spark's JSON leaves them out, and "refs": each branch's and tag's
rows the same way ({"columns", "rows"} or {"unreadable"}, read at the
ref's snapshot with that snapshot's schema, as Spark's VERSION AS OF
reads it); or {"unreadable": "..."}: why PyIceberg cannot read it (it
does not apply equality deletes, for one).
"""

import json
import sys

from pyiceberg.table import StaticTable
from pyiceberg.types import BooleanType, IntegerType, LongType, StringType

COMPARABLE = (IntegerType, LongType, StringType, BooleanType)


def rows_at(table, schema, snapshot_id):
    """The rows at a snapshot (None: the current one) on schema's comparable columns."""
    try:
        columns = [f.name for f in schema.fields if isinstance(f.field_type, COMPARABLE)]
        if snapshot_id is None and table.current_snapshot() is None:
            return {"columns": columns, "rows": []}
        rows = table.scan(selected_fields=tuple(columns), snapshot_id=snapshot_id).to_arrow().to_pylist()
        return {"columns": columns, "rows": [{k: v for k, v in r.items() if v is not None} for r in rows]}
    except Exception as e:  # noqa: BLE001 - what PyIceberg refuses is the answer
        return {"unreadable": f"{type(e).__name__}: {e}"}


def read(location):
    try:
        table = StaticTable.from_metadata(location)
    except Exception as e:  # noqa: BLE001
        return {"unreadable": f"{type(e).__name__}: {e}"}
    out = rows_at(table, table.schema(), None)
    if "unreadable" in out:
        return out
    out["refs"] = {}
    for name, ref in table.metadata.refs.items():
        snap = table.metadata.snapshot_by_id(ref.snapshot_id)
        schema = table.schema()
        if snap is not None and snap.schema_id is not None:
            schema = next((s for s in table.metadata.schemas if s.schema_id == snap.schema_id), schema)
        out["refs"][name] = rows_at(table, schema, ref.snapshot_id)
    return out


def main():
    json.dump({loc: read(loc) for loc in sys.argv[1:]}, sys.stdout)


if __name__ == "__main__":
    main()
