"""Columnar files: a table of named columns as Parquet (pyarrow) or CSV, with metadata.

Time series, per-message records and packet indexes are written through here, so every
table the project writes opens the same way in pandas, polars, DuckDB or a spreadsheet.
A table is ``{name: sequence}`` (all of one length) plus a ``schema``: ``[(name, type)]``
with types ``int64``, ``int32``, ``int16``, ``float64``, ``float32``, ``bool`` or
``string`` (strings are dictionary-encoded in Parquet: node names and tiers repeat).
Parquet carries the metadata (a flat ``{str: str}``) in the file; CSV writes it to a
``.meta.json`` file beside the table.  A missing value (None) is a null in Parquet and an
empty field in CSV.

pyarrow is optional (``pip install 'gse-transport[data]'``): a Parquet path without it is
one clear error naming the fix.  CSV needs nothing.
"""

import csv
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

TYPES = ("int64", "int32", "int16", "float64", "float32", "bool", "string")


class Coded:
    """A string column given as integer ``codes`` into ``values`` (a dictionary-encoded
    column: what a long table's node names and tiers are), without a string per row."""

    __slots__ = ("codes", "values")

    def __init__(self, codes, values):
        self.codes = codes
        self.values = list(values)

    def __len__(self):
        return len(self.codes)

    def __iter__(self):
        values = self.values
        return (values[c] for c in self.codes)


def format_of(path: str, fmt: str | None = None) -> str:
    """'parquet' or 'csv': ``fmt`` if given, else from the file name (default parquet)."""
    if fmt:
        if fmt not in ("parquet", "csv"):
            raise ValueError("table format must be parquet or csv, got %r" % (fmt,))
        return fmt
    return "csv" if path.lower().endswith(".csv") else "parquet"


def pyarrow_module():
    try:
        import pyarrow
        import pyarrow.parquet  # noqa: F401  (the submodule is what writes files)
    except ImportError as exc:
        raise RuntimeError("Parquet files need pyarrow: pip install 'gse-transport[data]' "
                           "(or ask for CSV)") from exc
    return pyarrow


def write_table(path: str, columns: Mapping[str, Any], schema: Sequence[tuple[str, str]],
                metadata: Mapping[str, str] | None = None, fmt: str | None = None) -> None:
    """Write ``columns`` (``{name: sequence}``) in the order and types of ``schema``."""
    names = [name for name, _ in schema]
    n = None
    for name, typ in schema:
        if typ not in TYPES:
            raise ValueError("column %r: unknown type %r" % (name, typ))
        if name not in columns:
            raise ValueError("column %r missing from the table for %s" % (name, path))
        if n is None:
            n = len(columns[name])
        elif len(columns[name]) != n:
            raise ValueError("column %r has %d rows, expected %d"
                             % (name, len(columns[name]), n))
    meta = {str(k): str(v) for k, v in (metadata or {}).items()}
    if format_of(path, fmt) == "csv":
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(names)
            for row in zip(*(columns[name] for name in names)):
                w.writerow(["" if v is None else v for v in row])
        with open(_meta_path(path), "w") as f:
            json.dump({"schema": schema, "metadata": meta}, f, indent=2, sort_keys=True)
            f.write("\n")
        return
    pa = pyarrow_module()
    arrays = []
    fields = []
    for name, typ in schema:
        values = columns[name]
        if isinstance(values, Coded):
            arr = pa.DictionaryArray.from_arrays(pa.array(values.codes, type=pa.int32()),
                                                 pa.array(values.values, type=pa.string()))
        elif typ == "string":
            arr = pa.array(list(values), type=pa.string()).dictionary_encode()
        else:
            arr = pa.array(_as_list(values), type=getattr(pa, _PA[typ])())
        arrays.append(arr)
        fields.append(pa.field(name, arr.type))
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=meta))
    import pyarrow.parquet as pq
    pq.write_table(table, path)


_PA = {"int64": "int64", "int32": "int32", "int16": "int16", "float64": "float64",
       "float32": "float32", "bool": "bool_"}


def _as_list(values):
    # array('q') and friends go to pyarrow through numpy without a Python object per value
    if hasattr(values, "typecode"):
        import numpy
        return numpy.frombuffer(values, dtype=numpy.dtype(values.typecode))
    return values


def _meta_path(path):
    stem = path[:-4] if path.lower().endswith(".csv") else path
    return stem + ".meta.json"


def read_table(path: str) -> tuple[dict[str, list[Any]], dict[str, str]]:
    """(columns as ``{name: list}``, metadata ``{str: str}``) of a file ``write_table``
    wrote (Parquet or CSV, by the name)."""
    if not os.path.exists(path):
        raise OSError("no table at %s" % path)
    if format_of(path) == "csv":
        types = {}
        meta = {}
        mp = _meta_path(path)
        if os.path.exists(mp):
            with open(mp) as f:
                side = json.load(f)
            types = dict(side.get("schema", ()))
            meta = side.get("metadata", {})
        with open(path, newline="") as f:
            rows = csv.reader(f)
            try:
                names = next(rows)
            except StopIteration:
                raise ValueError("%s: empty file (no header line)" % path) from None
            cols: dict[str, list[Any]] = {name: [] for name in names}
            for line, row in enumerate(rows, start=2):
                if len(row) != len(names):
                    raise ValueError("%s line %d: %d fields, header has %d"
                                     % (path, line, len(row), len(names)))
                for name, value in zip(names, row):
                    cols[name].append(value)
        for name, values in cols.items():
            cols[name] = _parse(values, types.get(name), path, name)
        return cols, meta
    pa = pyarrow_module()
    import pyarrow.parquet as pq
    table = pq.read_table(path)
    meta = {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()
            if not k.startswith(b"ARROW:") and k != b"pandas"}
    cols = {}
    for name in table.column_names:
        col = table.column(name)
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)
        cols[name] = col.to_pylist()
    return cols, meta


def _parse(values, typ, path, name):
    if typ is None or typ == "string":
        return values
    try:                                # an empty field is a missing value (None)
        if typ == "bool":
            return [None if v == "" else v == "True" for v in values]
        if typ.startswith("int"):
            return [None if v == "" else int(v) for v in values]
        return [None if v == "" else float(v) for v in values]
    except ValueError as exc:
        raise ValueError("%s column %s: %s" % (path, name, exc)) from None
