"""Random typed SQL expressions for the differential fuzzer (test_expression_fuzzer.py): a
grammar of the operators and functions acidorc evaluates without Spark, over the columns of
:data:`SCHEMA`, producing Spark SQL text. Each expression is built for a wanted type (int,
bigint, double, decimal, string, boolean, date), so that what is generated parses and types in
Spark; what acidorc refuses engine-free (an unsupported function) is skipped by the fuzzer, not
counted as agreement.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from decimal import Decimal

import pyarrow as pa

INT_MIN, INT_MAX, LONG_MIN, LONG_MAX = -(1 << 31), (1 << 31) - 1, -(1 << 63), (1 << 63) - 1

SCHEMA = pa.schema([
    ("id", pa.int32()), ("i", pa.int32()), ("j", pa.int32()), ("b", pa.int64()), ("d", pa.float64()),
    ("e", pa.float64()), ("m", pa.decimal128(10, 2)), ("w", pa.decimal128(20, 10)), ("s", pa.string()),
    ("t", pa.string()), ("bo", pa.bool_()), ("da", pa.date32()),
])
ROWS = pa.table({
    "id": list(range(12)),
    "i": [0, 1, -1, 7, INT_MAX, INT_MIN, None, 3, -7, 100, 2, 5],
    "j": [3, 0, 2, -3, 1, -1, 4, None, 7, 0, 2, 1],
    "b": [0, LONG_MAX, LONG_MIN, 5, None, -1, 10**12, 3, -3, 2**53 + 1, 1, 7],
    "d": [0.0, -0.0, 1.5, math.nan, math.inf, -math.inf, None, 1e300, -2.5, 1e-300, 3.0, 0.1],
    "e": [2.0, 0.0, -1.0, 0.5, math.nan, None, 3.0, -0.0, 1e10, 7.0, 0.3, -2.0],
    "m": [Decimal("0.00"), Decimal("1.10"), Decimal("-7.50"), None, Decimal("99999999.99"), Decimal("-99999999.99"),
          Decimal("0.01"), Decimal("3.00"), Decimal("12.34"), Decimal("-0.05"), Decimal("2.50"), Decimal("1.00")],
    "w": [Decimal("12345678.1234567891"), Decimal("-1.0000000005"), None, Decimal("0.0000000001"),
          Decimal("9999999999.9999999999"), Decimal("0E-10"), Decimal("3.3333333333"), Decimal("-2.5000000000"),
          Decimal("1.0000000000"), Decimal("-0.0000000001"), Decimal("7.0000000000"), Decimal("100.0000000000")],
    "s": ["abc", "", "ÄÖü", None, "a%b_c", " pad ", "123", "-4.5", "NaN", "2024-02-29", "x'y", "ABC"],
    "t": ["b", "abc", "", "ü", None, "pad", "12", "1e3", "true", "%", "Z", "abcabc"],
    "bo": [True, False, None, True, False, True, None, False, True, False, True, False],
    "da": [dt.date(2024, 2, 29), dt.date(1970, 1, 1), None, dt.date(1, 1, 1), dt.date(9999, 12, 31),
           dt.date(2000, 1, 1), dt.date(1969, 12, 31), dt.date(2024, 1, 1), dt.date(1582, 10, 15),
           dt.date(2038, 1, 19), dt.date(2024, 12, 31), dt.date(1900, 3, 1)],
}, schema=SCHEMA)

COLUMNS = {"int": ["i", "j"], "bigint": ["b"], "double": ["d", "e"], "decimal": ["m", "w"], "string": ["s", "t"],
           "boolean": ["bo"], "date": ["da"]}
LITERALS = {
    "int": ["0", "1", "-1", "2", "7", "-3", "100", "2147483647", "-2147483648"],
    "bigint": ["0L", "1L", "-1L", "9223372036854775807L", "3L", "1000000000000L"],
    "double": ["0.0D", "-0.0D", "1.5D", "1e300", "-2.5E0", "CAST('NaN' AS DOUBLE)", "CAST('Infinity' AS DOUBLE)",
               "0.1D"],
    "decimal": ["1.5", "0.3", "-7.25", "0.00", "100.000", "99999999999999999999.5", "0.0000000001", "3"],
    "string": ["''", "'abc'", "'ü'", "'a%b'", "' pad '", "'12'", "'NaN'", "'2024-02-29'", "'x''y'"],
    "boolean": ["true", "false"],
    "date": ["DATE '2024-02-29'", "DATE '1970-01-01'", "DATE '0001-01-01'"],
}
NUMERIC = ("int", "bigint", "double", "decimal")
DECIMAL_TYPES = ["DECIMAL(5,2)", "DECIMAL(10,0)", "DECIMAL(12,6)", "DECIMAL(38,10)", "DECIMAL(3,1)"]


class Grammar:
    """Expressions of one wanted type, at most ``depth`` operations deep, from ``rng``."""

    def __init__(self, rng: random.Random, depth: int = 3):
        self.rng = rng
        self.depth = depth

    def expression(self, kind: str | None = None) -> str:
        kind = kind or self.rng.choice(list(COLUMNS))
        return self.of(kind, self.depth)

    def of(self, kind: str, depth: int) -> str:
        rng = self.rng
        if depth <= 0 or rng.random() < 0.25:
            return self.leaf(kind)
        builders = getattr(self, f"_{kind}")(depth - 1)
        return rng.choice(builders)()

    def leaf(self, kind: str) -> str:
        rng = self.rng
        if rng.random() < 0.6:
            return rng.choice(COLUMNS[kind])
        if rng.random() < 0.1:
            return f"CAST(NULL AS {kind.upper() if kind != 'decimal' else 'DECIMAL(10,2)'})"
        return rng.choice(LITERALS[kind])

    def number(self, depth: int) -> str:
        return self.of(self.rng.choice(NUMERIC), depth)

    def _guarded(self, kind: str, depth: int) -> list:
        """CASE / IF / COALESCE / NULLIF / NVL of ``kind``: the lazy forms."""
        return [
            lambda: (f"CASE WHEN {self.of('boolean', depth)} THEN {self.of(kind, depth)} "
                     f"ELSE {self.of(kind, depth)} END"),
            lambda: f"IF({self.of('boolean', depth)}, {self.of(kind, depth)}, {self.of(kind, depth)})",
            lambda: f"coalesce({self.of(kind, depth)}, {self.of(kind, depth)})",
            lambda: f"nvl({self.of(kind, depth)}, {self.of(kind, depth)})",
            lambda: f"nullif({self.of(kind, depth)}, {self.of(kind, depth)})",
        ]

    def _arithmetic(self, kind: str, depth: int) -> list:
        ops = ["+", "-", "*"] + (["%"] if kind != "double" else [])
        return [
            lambda: f"({self.of(kind, depth)} {self.rng.choice(ops)} {self.of(kind, depth)})",
            lambda: f"(- {self.of(kind, depth)})",  # "--" would start a comment
            lambda: f"abs({self.of(kind, depth)})",
        ]

    def _int(self, depth: int) -> list:
        return [*self._arithmetic("int", depth), *self._guarded("int", depth),
                lambda: f"length({self.of('string', depth)})",
                lambda: f"CAST({self.of('string', depth)} AS INT)",
                lambda: f"CAST({self.of(self.rng.choice(['double', 'decimal', 'bigint']), depth)} AS INT)"]

    def _bigint(self, depth: int) -> list:
        return [*self._arithmetic("bigint", depth), *self._guarded("bigint", depth),
                lambda: f"({self.of(self.rng.choice(['int', 'bigint']), depth)} div {self.of('int', depth)})",
                lambda: f"CAST({self.of(self.rng.choice(['int', 'double', 'string']), depth)} AS BIGINT)"]

    def _double(self, depth: int) -> list:
        return [*self._arithmetic("double", depth), *self._guarded("double", depth),
                lambda: f"({self.of(self.rng.choice(['int', 'bigint', 'double']), depth)} / "
                        f"{self.of(self.rng.choice(['int', 'double']), depth)})",
                lambda: f"CAST({self.of(self.rng.choice(['int', 'decimal']), depth)} AS DOUBLE)"]

    def _decimal(self, depth: int) -> list:
        return [*self._arithmetic("decimal", depth), *self._guarded("decimal", depth),
                lambda: f"({self.of('decimal', depth)} / {self.of(self.rng.choice(['decimal', 'int']), depth)})",
                lambda: f"({self.of('decimal', depth)} {self.rng.choice(['+', '*', '-'])} {self.of('int', depth)})",
                lambda: f"CAST({self.of(self.rng.choice(['int', 'decimal', 'string']), depth)} AS "
                        f"{self.rng.choice(DECIMAL_TYPES)})"]

    def _string(self, depth: int) -> list:
        return [*self._guarded("string", depth),
                lambda: f"concat({self.of('string', depth)}, {self.of('string', depth)})",
                lambda: f"upper({self.of('string', depth)})", lambda: f"lower({self.of('string', depth)})",
                lambda: f"trim({self.of('string', depth)})",
                lambda: f"substring({self.of('string', depth)}, {self.rng.choice(['0', '1', '2', '-2', '-5', 'j'])}, "
                        f"{self.rng.choice(['1', '3', '-1', '100'])})",
                lambda: f"substr({self.of('string', depth)}, {self.rng.choice(['1', '3', '-1'])})",
                lambda: f"{self.rng.choice(['ltrim', 'rtrim'])}({self.of('string', depth)})",
                lambda: f"CAST({self.of(self.rng.choice(['int', 'bigint', 'decimal', 'date']), depth)} AS STRING)"]

    def _boolean(self, depth: int) -> list:
        def compare() -> str:
            kind = self.rng.choice(["int", "bigint", "double", "decimal", "string", "date", "number"])
            left = self.number(depth) if kind == "number" else self.of(kind, depth)
            right = self.number(depth) if kind == "number" else self.of(kind, depth)
            return f"({left} {self.rng.choice(['=', '<>', '<', '<=', '>', '>=', '<=>'])} {right})"

        return [compare, compare, compare, *self._guarded("boolean", depth),
                lambda: f"({self.of('boolean', depth)} AND {self.of('boolean', depth)})",
                lambda: f"({self.of('boolean', depth)} OR {self.of('boolean', depth)})",
                lambda: f"(NOT {self.of('boolean', depth)})",
                lambda: f"({self.of(self.rng.choice(list(COLUMNS)), depth)} IS NULL)",
                lambda: f"({self.of(self.rng.choice(list(COLUMNS)), depth)} IS NOT NULL)",
                lambda: f"({self.number(depth)} BETWEEN {self.number(depth)} AND {self.number(depth)})",
                lambda: f"({self.of('int', depth)} IN ({self.leaf('int')}, {self.leaf('int')}))",
                lambda: f"({self.of('string', depth)} LIKE {self.rng.choice(LIKE_PATTERNS)})"]

    def _date(self, depth: int) -> list:
        return [*self._guarded("date", depth)]


LIKE_PATTERNS = ["'a%'", "'%b%'", "'_'", "''", "'%'", "'A_C'", "'a\\\\%b%'", "t"]
