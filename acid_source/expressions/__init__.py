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
``TIMESTAMP '...'``, ``10L`` ...), ``CASE``, struct fields ``a.b`` and the functions
:func:`engine_free_functions` names. Column names match case-insensitively; backquotes quote
them.

Semantics are Spark SQL 4's with its defaults (ANSI mode): three-valued logic, a NULL
condition matches nothing, literals take the type of what they are compared with, numbers
widen and decimals get their precision and scale as in Spark (division exact, rounded half
up), NaN equals NaN and sorts above every number, and a division by zero, an overflow or a
cast out of range fails - only on the rows Spark evaluates (CASE, IF, AND, OR, COALESCE guard
their operands). tests/spark/test_expression_fuzzer.py holds the compiler to Spark's answers.
"""

from .conditions import (
    Condition,
    ValueExpression,
    columns_of,
    parse_condition,
    parse_partition_filter,
    parse_value_expression,
)


def engine_free_functions() -> list[str]:
    """The SQL functions conditions and values may call without Spark, by the names sqlglot
    reads for them (a superset of Spark's names: the README lists those Spark has too)."""
    from sqlglot import exp

    from .compiler import registered_classes

    names = {name.lower() for cls in registered_classes() if issubclass(cls, exp.Func) for name in cls.sql_names()}
    if exp.Trim in registered_classes():
        names |= {"ltrim", "rtrim"}  # trim's LEADING and TRAILING forms
    return sorted(names - {"and", "or", "case"})  # operators and syntax sqlglot models as functions


__all__ = ["Condition", "ValueExpression", "columns_of", "engine_free_functions", "parse_condition",
           "parse_partition_filter", "parse_value_expression"]
