"""Reads a Parquet file with Apache Arrow and prints each row as JSON.

The export test writes the file with parquet-go and checks what this
independent reader sees: the columns, their types, and every value.
"""
import json
import sys

import pyarrow.parquet as pq

table = pq.read_table(sys.argv[1])
print(json.dumps({c.name: str(c.type) for c in table.schema}))
for row in table.to_pylist():
    for name in ("logtime", "time"):
        if row[name] is not None:
            row[name] = row[name].isoformat()
    print(json.dumps(row))
