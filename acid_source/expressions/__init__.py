"""SQL expressions (Spark dialect, parsed with sqlglot) as pyarrow compute expressions.

The only place acidorc turns SQL text into something: ``AcidTable.scan(rowFilter=...)``, the
``partitionFilter`` option (a condition on partition columns, see
:func:`parse_partition_filter`), the conditions and SET values of UPDATE, DELETE and MERGE,
and the statements of ``acid_source.sql`` (:mod:`.statements`). Depends on nothing in
acid_source but :mod:`acid_source.errors`.

Supported: comparisons (``= == != <> < <= > >= <=>``, ``IS [NOT] DISTINCT FROM``), AND / OR /
NOT, ``[NOT] IN (...)``, ``[NOT] BETWEEN``, ``IS [NOT] NULL|TRUE|FALSE``, ``[NOT] LIKE`` /
``ILIKE`` (``%``, ``_``, backslash escapes), ``+ - * / % div``, unary minus, ``||``, literals
(numbers typed as Spark types them, strings, TRUE / FALSE / NULL, ``DATE '...'``,
``TIMESTAMP '...'``, ``10L`` ...), ``CAST``, ``COALESCE`` / ``IFNULL`` / ``NVL``, ``IF``,
``CASE``, ``abs``, ``lower``, ``upper``, ``length``, struct fields ``a.b``. Column names match
case-insensitively; backquotes quote them.

Semantics are Spark SQL's: three-valued logic, a NULL condition matches nothing, literals take
the type of what they are compared with (``day = '2024-01-01'`` compares dates; a literal that
cannot be read as that type is an error while parsing), numbers widen as in Spark, ``/``
returns double, division by zero is NULL, casts truncate to integers and round decimals half
away from zero. Where it differs: integer overflow wraps (Spark's non-ANSI mode) while a cast
of a malformed string or of a value out of range fails at evaluation (ANSI mode); ``/`` and
decimal results wider than 38 digits are computed in double; NaN compares as in IEEE 754
(Spark treats NaN as equal to itself and larger than any number); a timestamp literal without
an offset is wall-clock time, taken as UTC against a column with a time zone.
"""

from .conditions import (
    Condition,
    ValueExpression,
    columns_of,
    parse_condition,
    parse_partition_filter,
    parse_value_expression,
)

__all__ = ["Condition", "ValueExpression", "columns_of", "parse_condition", "parse_partition_filter",
           "parse_value_expression"]
