"""CSV files as typed tables, and back to the same bytes.

Reading: every cell is read as text first (pyarrow's CSV parser, so ragged rows and bad UTF-8 are caught),
then each column's type is inferred over ALL rows of ALL files of the table, deterministically:

    int      every non-null cell is a canonical integer ("-12", not "007" or "+3") that fits int64
    float    every non-null cell is a decimal number without leading zeros ("1.5", "2", "1e-05")
    bool     every non-null cell is one spelling pair: TRUE/FALSE, True/False or true/false
    date     every non-null cell is YYYY-MM-DD
    datetime every non-null cell is ISO-8601 text: a date and a time, with or without an offset (Z, +02:00,
             -0500): a UTC timestamp; an offset is honoured, text without one is read as UTC (pyarrow's ISO-8601
             parser). It is written back in the first of `_DATETIME_FORMATS` that gives every cell back, else
             as UTC with +00:00
    string   anything else

A column the caller names a time column (`time_columns`: the pipeline's event time) must be a date or datetime
column: a value that is not ISO-8601 text is an error naming the column, the file and the value, never a null
and never a string column.

A cell is null when it is an unquoted empty field or an unquoted `NA` (R's spelling); a quoted "NA" is text.
How each column was written (float style, null token) and each file's dialect (delimiter, line ending,
final newline, whether strings are quoted as R does) are recorded, so a file can be written back the same
way. `FileDialect.round_trips` says whether re-rendering the parsed file gives back exactly its bytes: it is
checked, not assumed.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from tables.objectstore import LocationError

__all__ = [
    "ColumnFormat",
    "FileDialect",
    "CsvSchema",
    "RawCsv",
    "read_raw",
    "infer_schema",
    "to_table",
    "render",
    "default_dialect",
]

_NULLS = ("", "NA")
_BOOLS = (("TRUE", "FALSE"), ("True", "False"), ("true", "false"))
_DATETIME_FORMATS = (
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%dT%H:%M:%S",
    "%Y-%m-%dT%H:%M:%SZ",
    "%Y-%m-%d %H:%M",
    "%Y-%m-%dT%H:%M",
    "%Y-%m-%d %H:%M:%S.%f",
    "%Y-%m-%dT%H:%M:%S.%f",
    "%Y-%m-%dT%H:%M:%S.%fZ",
    "%Y-%m-%d %H:%M:%S+00:00",  # pandas' to_csv of UTC timestamps
    "%Y-%m-%dT%H:%M:%S+00:00",  # Python's isoformat() of UTC datetimes
    "%Y-%m-%d %H:%M:%S.%f+00:00",
    "%Y-%m-%dT%H:%M:%S.%f+00:00",
)
_ISO_TIME = (
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,6})?)?(Z|[+-][0-9]{2}(:?[0-9]{2})?)?)?"
)
_OFFSET = r"(Z|[+-][0-9]{2}(:?[0-9]{2})?)$"
_ISO_EXAMPLES = "2026-03-01, 2026-03-01T12:00:00, 2026-03-01 12:00:00Z or 2026-03-01T12:00:00+02:00"


@dataclass(frozen=True)
class ColumnFormat:
    name: str
    kind: str  # int | float | bool | date | datetime | string
    style: str = ""  # float: repr | short | fixed:N; bool: "TRUE/FALSE"...; datetime: strftime format
    null: str = ""  # the token written for a null

    def arrow_type(self) -> pa.DataType:
        if self.kind == "datetime":
            return pa.timestamp("us" if "%f" in self.style else "s", tz="UTC")
        return {
            "int": pa.int64(),
            "float": pa.float64(),
            "bool": pa.bool_(),
            "date": pa.date32(),
            "string": pa.string(),
        }[self.kind]


@dataclass(frozen=True)
class FileDialect:
    delimiter: str = ","
    newline: str = "\n"
    final_newline: bool = True
    quote_strings: bool = False  # R's write.csv: header and every string quoted, NA bare
    round_trips: bool = True


@dataclass(frozen=True)
class CsvSchema:
    columns: tuple[ColumnFormat, ...]

    def arrow_schema(self) -> pa.Schema:
        return pa.schema([pa.field(c.name, c.arrow_type()) for c in self.columns])

    def to_json(self) -> list[dict]:
        return [asdict(c) for c in self.columns]

    @classmethod
    def from_json(cls, data: list[dict]) -> CsvSchema:
        return cls(tuple(ColumnFormat(**c) for c in data))


@dataclass(frozen=True)
class RawCsv:
    """One CSV file's cells as text (never null), and which cells were bare null tokens."""

    name: str
    header: tuple[str, ...]
    cells: dict[str, pa.Array]
    bare_null: dict[str, pa.Array]  # booleans
    dialect: FileDialect  # round_trips not yet known


def default_dialect() -> FileDialect:
    return FileDialect()


def read_raw(path: Path, name: str) -> RawCsv:
    data = path.read_bytes()
    if not data.strip():
        raise LocationError(f"{name} is an empty CSV file", "give it a header row, or remove it from the table")
    try:
        first = data.split(b"\n", 1)[0].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LocationError(f"{name} is not a UTF-8 CSV file", "export it as UTF-8 CSV, or fix the data: path") from exc
    dialect = _sniff(data, first)
    text_cells = _parse(path, name, dialect, nulls=False)
    null_cells = _parse(path, name, dialect, nulls=True)
    header = tuple(text_cells.column_names)
    if len(set(header)) != len(header) or any(not h for h in header):
        raise LocationError(
            f"{name} has empty or repeated column names {list(header)}",
            "give every column a unique name in the header row",
        )
    cells = {h: text_cells.column(i).combine_chunks() for i, h in enumerate(header)}
    bare = {h: null_cells.column(i).combine_chunks().is_null() for i, h in enumerate(header)}
    return RawCsv(name, header, cells, bare, dialect)


def _sniff(data: bytes, first: str) -> FileDialect:
    counts = {d: first.count(d) for d in (",", ";", "\t", "|")}
    delimiter = max(counts, key=lambda d: (counts[d], d == ","))
    newline = "\r\n" if first.endswith("\r") else "\n"
    return FileDialect(delimiter, newline, data.endswith(b"\n"), first.startswith('"'))


def _parse(path: Path, name: str, dialect: FileDialect, *, nulls: bool) -> pa.Table:
    options = pacsv.ConvertOptions(
        check_utf8=True,
        strings_can_be_null=nulls,
        quoted_strings_can_be_null=False,
        null_values=list(_NULLS) if nulls else [],
        auto_dict_encode=False,
    )
    try:
        names = _header(path, dialect)
        options.column_types = {n: pa.string() for n in names}
        return pacsv.read_csv(
            path, parse_options=pacsv.ParseOptions(delimiter=dialect.delimiter), convert_options=options
        )
    except (pa.ArrowInvalid, UnicodeDecodeError) as exc:
        detail = str(exc).splitlines()[0]
        raise LocationError(
            f"{name} is not a well-formed CSV file ({detail})",
            "fix the rows so every row has the header's number of fields, or remove the file",
        ) from exc


def _header(path: Path, dialect: FileDialect) -> list[str]:
    reader = pacsv.open_csv(
        path,
        parse_options=pacsv.ParseOptions(delimiter=dialect.delimiter),
        read_options=pacsv.ReadOptions(block_size=1 << 20),
    )
    return list(reader.schema.names)


# ------------------------------------------------------------------------------------------ inference


def infer_schema(files: list[RawCsv], time_columns: tuple[str, ...] = ()) -> CsvSchema:
    """Column types over every row of every file; the files must share one header. Each of `time_columns` in
    the header must come out a date or datetime column (else LocationError naming its first bad value)."""
    header = files[0].header
    for raw in files[1:]:
        if raw.header != header:
            raise LocationError(
                f"CSV files have different columns: {files[0].name} has {list(header)}, "
                f"{raw.name} has {list(raw.header)}",
                "give every file of the table the same header, or move the odd file out",
            )
    schema = CsvSchema(tuple(_infer_column(h, files) for h in header))
    for column in schema.columns:
        if column.name in time_columns and column.kind not in ("date", "datetime"):
            _refuse_time_column(column.name, files)
    return schema


def _refuse_time_column(name: str, files: list[RawCsv]) -> None:
    for raw in files:
        values = raw.cells[name].filter(pc.invert(raw.bare_null[name]))
        bad = next((v for v in values.to_pylist() if _iso_unit(pa.array([v])) is None), None)
        if bad is not None:
            raise LocationError(
                f"{raw.name}: time column {name!r} holds {bad[:60]!r}, which is not ISO-8601 text",
                f"write {name} as ISO-8601 text in every row ({_ISO_EXAMPLES})",
            )


def _infer_column(name: str, files: list[RawCsv]) -> ColumnFormat:
    texts = pa.chunked_array([raw.cells[name] for raw in files], type=pa.string())
    bare = pa.chunked_array([raw.bare_null[name] for raw in files], type=pa.bool_())
    values = texts.filter(pc.invert(bare)).combine_chunks()
    tokens = set(pc.unique(texts.filter(bare)).to_pylist())
    null = "NA" if tokens == {"NA"} else ""
    kind, style = _kind_of(values) if len(values) else ("string", "")
    return ColumnFormat(name, kind, style, null)


def _kind_of(values: pa.Array) -> tuple[str, str]:
    if _all_match(values, r"-?(0|[1-9][0-9]*)") and _casts(values, pa.int64()):
        return "int", ""
    if (
        _all_match(values, r"-?(0|[1-9][0-9]*)?(\.[0-9]+)?([eE][-+]?[0-9]+)?")
        and _all_match(values, r".*[0-9].*")
        and not pc.any(pc.match_substring_regex(values, r"^-?0[0-9]")).as_py()
        and _casts(values, pa.float64())
    ):
        return "float", _float_style(values.to_pylist())
    distinct = set(pc.unique(values).to_pylist())
    for true, false in _BOOLS:
        if distinct <= {true, false}:
            return "bool", f"{true}/{false}"
    if _all_match(values, r"[0-9]{4}-[0-9]{2}-[0-9]{2}") and _round_trips(values, "%Y-%m-%d"):
        return "date", "%Y-%m-%d"
    unit = _iso_unit(values)
    if unit is None:
        return "string", ""
    parsed = parse_iso(values, unit)
    for fmt in _DATETIME_FORMATS:
        if ("%f" in fmt) == (unit == "us") and _renders_back(parsed, values, fmt):
            return "datetime", fmt
    return "datetime", "%Y-%m-%dT%H:%M:%S.%f+00:00" if unit == "us" else "%Y-%m-%dT%H:%M:%S+00:00"


def _iso_unit(values: pa.Array) -> str | None:
    """ "s" or "us" when every value is ISO-8601 text that pyarrow parses (fractions: microseconds), else None."""
    if not _all_match(values, _ISO_TIME):
        return None
    unit = "us" if pc.any(pc.match_substring(values, ".")).as_py() else "s"
    try:
        parse_iso(values, unit)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    return unit


def parse_iso(values: pa.Array, unit: str) -> pa.Array:
    """ISO-8601 text as UTC timestamps: a value's offset is honoured, a value without one is read as UTC."""
    utc = pa.timestamp(unit, tz="UTC")
    offset = pc.match_substring_regex(values, _OFFSET)
    none = pa.scalar(None, pa.string())
    aware = pc.if_else(offset, values, none).cast(utc)
    naive = pc.if_else(offset, none, values).cast(pa.timestamp(unit)).cast(utc)
    return pc.coalesce(aware, naive)


def _renders_back(parsed: pa.Array, values: pa.Array, fmt: str) -> bool:
    rendered = _render_datetime(parsed, fmt)
    return bool(pc.all(pc.equal(rendered, values)).as_py())


def _all_match(values: pa.Array, pattern: str) -> bool:
    return bool(pc.all(pc.match_substring_regex(values, f"^(?:{pattern})$")).as_py())


def _casts(values: pa.Array, target: pa.DataType) -> bool:
    try:
        values.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return False
    return True


def _float_style(values: list[str]) -> str:
    """The first style that writes back every cell exactly; else the one that writes back the most."""
    numbers = [float(v) for v in values]
    decimals = Counter(len(v.split(".")[1]) for v in values if "." in v and "e" not in v.lower())
    styles = ["repr", "short"] + [f"fixed:{n}" for n, _ in decimals.most_common(2)]
    scores = {}
    for style in styles:
        scores[style] = sum(_format_float(x, style) == v for x, v in zip(numbers, values))
        if scores[style] == len(values):
            return style
    return max(styles, key=lambda s: scores[s])


def _round_trips(values: pa.Array, fmt: str) -> bool:
    """Every value parses with `fmt` and prints back identically (so 2024-02-30 is refused)."""
    parsed = pc.strptime(values, format=fmt, unit="s", error_is_null=True)
    if parsed.null_count:
        return False
    return bool(pc.all(pc.equal(pc.strftime(parsed, format=fmt), values)).as_py())


# ------------------------------------------------------------------------------------- typed tables


def to_table(raw: RawCsv, schema: CsvSchema) -> pa.Table:
    arrays = [_convert(raw.cells[c.name], raw.bare_null[c.name], c) for c in schema.columns]
    return pa.Table.from_arrays(arrays, schema=schema.arrow_schema())


def _convert(texts: pa.Array, bare: pa.Array, column: ColumnFormat) -> pa.Array:
    values = pc.if_else(bare, pa.scalar(None, pa.string()), texts)
    target = column.arrow_type()
    if column.kind in ("int", "float", "string"):
        return values.cast(target)
    if column.kind == "bool":
        return pc.equal(values, column.style.split("/")[0])
    if column.kind == "datetime":
        return parse_iso(values, target.unit)
    parsed = pc.strptime(values, format=column.style, unit="s", error_is_null=False)
    return parsed.cast(target)


# ------------------------------------------------------------------------------------------- writing


def render(table: pa.Table, schema: CsvSchema, dialect: FileDialect) -> bytes:
    """The table as CSV bytes, each column written the way `schema` recorded it (by name); a column that
    is new or whose type changed is written in the default way for its type."""
    formats = {c.name: c for c in schema.columns}
    columns = []
    for field, column in zip(table.schema, table.columns):
        recorded = formats.get(field.name)
        fmt = recorded if recorded and recorded.arrow_type() == field.type else _default_format(field)
        columns.append(_render_column(column.combine_chunks(), fmt, dialect))
    header = dialect.delimiter.join(_quote(f.name, dialect, force=dialect.quote_strings) for f in table.schema)
    rows = pc.binary_join_element_wise(*columns, dialect.delimiter).to_pylist() if columns and table.num_rows else []
    body = dialect.newline.join([header] + rows)
    return (body + dialect.newline if dialect.final_newline else body).encode("utf-8")


def _default_format(field: pa.Field) -> ColumnFormat:
    t = field.type
    if pa.types.is_integer(t):
        return ColumnFormat(field.name, "int")
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        return ColumnFormat(field.name, "float", "repr")
    if pa.types.is_boolean(t):
        return ColumnFormat(field.name, "bool", "True/False")
    if pa.types.is_date(t):
        return ColumnFormat(field.name, "date", "%Y-%m-%d")
    if pa.types.is_timestamp(t):
        return ColumnFormat(field.name, "datetime", "%Y-%m-%dT%H:%M:%S.%f" + ("Z" if t.tz else ""))
    return ColumnFormat(field.name, "string")


def _render_column(values: pa.Array, fmt: ColumnFormat, dialect: FileDialect) -> pa.Array:
    if fmt.kind == "string":
        text = values.cast(pa.string())
        needs = pc.or_(
            pc.match_substring_regex(text, "[" + re.escape(dialect.delimiter) + '"\r\n]'),
            pc.is_in(text, pa.array(_NULLS)),
        )
        if dialect.quote_strings:
            needs = pc.is_valid(text)
        quoted = pc.binary_join_element_wise('"', pc.replace_substring(text, '"', '""'), '"', "")
        text = pc.if_else(needs, quoted, text)
    elif fmt.kind == "int":
        text = values.cast(pa.string())
    elif fmt.kind == "bool":
        true, false = (fmt.style or "True/False").split("/")
        text = pc.if_else(values, true, false)
    elif fmt.kind == "float":
        text = pa.array([None if v is None else _format_float(v, fmt.style) for v in values.to_pylist()], pa.string())
    elif fmt.kind == "datetime":
        text = _render_datetime(values, fmt.style)
    else:  # date
        text = pc.strftime(values, format=fmt.style or "%Y-%m-%d")
    return pc.fill_null(text, fmt.null)


def _render_datetime(values: pa.Array, fmt: str) -> pa.Array:
    """Timestamps as text in UTC (naive ones as they are); arrow's strftime has no %f: that way is Python's."""
    if "%f" in fmt:
        return pa.array([None if v is None else _format_datetime(v, fmt) for v in values.to_pylist()], pa.string())
    if values.type.tz is None:
        values = values.cast(pa.timestamp(values.type.unit, tz="UTC"))
    return pc.strftime(values, format=fmt)


def _quote(text: str, dialect: FileDialect, *, force: bool) -> str:
    needs = force or any(ch in text for ch in (dialect.delimiter, '"', "\n", "\r")) or text in _NULLS
    return '"' + text.replace('"', '""') + '"' if needs else text


def _format_float(value: float, style: str) -> str:
    if style.startswith("fixed:"):
        return f"{value:.{int(style[6:])}f}"
    text = repr(float(value))
    return text[:-2] if style == "short" and text.endswith(".0") else text


def _format_datetime(value: datetime, fmt: str) -> str:
    if value.tzinfo is not None:
        value = value.astimezone(timezone.utc)
    return value.strftime(fmt)
