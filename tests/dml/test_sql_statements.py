"""Parsing Spark SQL UPDATE / DELETE / MERGE into plain data (acid_source.expressions.statements).

No Spark here: the expected statements are written out by hand, and the error tests check the
position a user is shown (line, column, the statement line with a caret) character by character.
"""

from __future__ import annotations

import pickle

import pytest

from acid_source.errors import InvalidArgumentError
from acid_source.expressions.statements import (
    DeleteStatement,
    MergeClause,
    MergeStatement,
    TableRef,
    UpdateStatement,
    parse_statement,
    source_query,
    statement_target,
)


def error_of(statement: str) -> str:
    with pytest.raises(InvalidArgumentError) as info:
        parse_statement(statement)
    message = str(info.value)
    assert "\x1b" not in message
    assert info.value.argument == "statement"
    return message


def caret(message: str) -> tuple[str, str]:
    """The statement line and the caret line at the end of an error message."""
    *_, line, mark = message.split("\n")
    return line[2:], mark[2:]


# --- UPDATE ----------------------------------------------------------------------------------
def test_update_by_name_with_where():
    s = parse_statement("UPDATE db.sales SET amount = amount * 2, region = 'eu' WHERE id > 3 AND day IS NULL")
    assert s == UpdateStatement(TableRef(("db", "sales")), "sales", (("amount", "amount * 2"), ("region", "'eu'")),
                                "id > 3 AND day IS NULL")


def test_update_alias_qualifiers_are_stripped_from_set_columns():
    s = parse_statement("UPDATE t AS x SET x.a = x.a + 1, b = NULL")
    assert s == UpdateStatement(TableRef(("t",)), "x", (("a", "x.a + 1"), ("b", "NULL")), None)
    s = parse_statement("update db.t set db.t.a = 1, t.b = 2, `my col` = 3")  # lower case, no alias
    assert s.alias == "t" and s.assignments == (("a", "1"), ("b", "2"), ("my col", "3"))
    s = parse_statement("UPDATE t x SET X.a = 1")  # alias without AS, matched case-insensitively
    assert s.alias == "x" and s.assignments == (("a", "1"),)


def test_update_by_path_has_no_default_alias():
    s = parse_statement("UPDATE acidorc.`/data/my table` SET a = 1")
    assert s == UpdateStatement(TableRef(path="/data/my table"), None, (("a", "1"),), None)
    s = parse_statement("UPDATE ACIDORC.`s3a://bucket/t` AS t SET a = 1")
    assert s.target == TableRef(path="s3a://bucket/t") and s.alias == "t"
    assert parse_statement("UPDATE acidorc.`file:/tmp/t` SET a = 1").target == TableRef(path="file:/tmp/t")


def test_acidorc_qualifier_without_a_path_is_a_name():
    assert parse_statement("DELETE FROM acidorc.events").target == TableRef(("acidorc", "events"))


def test_time_travel_on_the_target_is_recorded_for_the_caller_to_refuse():
    assert parse_statement("UPDATE t VERSION AS OF 3 SET a = 1").target == TableRef(("t",), version=("VERSION", "3"))
    s = parse_statement("DELETE FROM acidorc.`/p` TIMESTAMP AS OF '2024-01-01 00:00:00'")
    assert s.target == TableRef(path="/p", version=("TIMESTAMP", "2024-01-01 00:00:00"))


def test_update_expressions_are_the_text_as_written():
    s = parse_statement("UPDATE t SET a = CASE WHEN b <=> NULL THEN upper(c) ELSE c END, "
                        "d = date'2024-01-01' + INTERVAL 1 DAY WHERE arr[0] = m['k'] OR NOT id IN (1, 2)")
    assert s.assignments == (("a", "CASE WHEN b <=> NULL THEN upper(c) ELSE c END"),
                             ("d", "date'2024-01-01' + INTERVAL 1 DAY"))
    assert s.condition == "arr[0] = m['k'] OR NOT id IN (1, 2)"


# --- DELETE ----------------------------------------------------------------------------------
def test_delete_forms():
    assert parse_statement("DELETE FROM t") == DeleteStatement(TableRef(("t",)), "t", None)
    assert parse_statement("DELETE FROM db.t AS x WHERE x.id = 1") == DeleteStatement(
        TableRef(("db", "t")), "x", "x.id = 1")
    assert parse_statement("DELETE FROM acidorc.`/w/t` WHERE p = 'a';") == DeleteStatement(
        TableRef(path="/w/t"), None, "p = 'a'")
    assert parse_statement("/* nightly */ -- cleanup\n  DELETE FROM t WHERE id < 0") == DeleteStatement(
        TableRef(("t",)), "t", "id < 0")


# --- MERGE -----------------------------------------------------------------------------------
def test_merge_every_clause_kind_in_statement_order():
    s = parse_statement(
        "MERGE INTO t USING s ON t.id = s.id "
        "WHEN MATCHED AND s.op = 'd' THEN DELETE "
        "WHEN MATCHED AND s.op = 'u' THEN UPDATE SET v = s.v, t.n = t.n + 1 "
        "WHEN MATCHED THEN UPDATE SET * "
        "WHEN NOT MATCHED AND s.op = 'i' THEN INSERT (id, v) VALUES (s.id, upper(s.v)) "
        "WHEN NOT MATCHED BY TARGET THEN INSERT * "
        "WHEN NOT MATCHED BY SOURCE AND t.n > 9 THEN UPDATE SET n = 0 "
        "WHEN NOT MATCHED BY SOURCE THEN DELETE")
    assert isinstance(s, MergeStatement)
    assert (s.target, s.alias, s.condition) == (TableRef(("t",)), "t", "t.id = s.id")
    assert (s.source.sql, s.source.alias, s.source.tables) == ("s", "s", (TableRef(("s",)),))
    assert s.clauses == (
        MergeClause("matched", "delete", "s.op = 'd'"),
        MergeClause("matched", "update", "s.op = 'u'", (("v", "s.v"), ("n", "t.n + 1"))),
        MergeClause("matched", "update", None, (), star=True),
        MergeClause("not_matched", "insert", "s.op = 'i'", (("id", "s.id"), ("v", "upper(s.v)"))),
        MergeClause("not_matched", "insert", None, (), star=True),
        MergeClause("not_matched_by_source", "update", "t.n > 9", (("n", "0"),)),
        MergeClause("not_matched_by_source", "delete", None),
    )


def test_merge_clause_order_is_kept_across_kinds():
    s = parse_statement("MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED THEN INSERT * "
                        "WHEN MATCHED AND s.x THEN DELETE WHEN NOT MATCHED BY SOURCE THEN DELETE "
                        "WHEN MATCHED THEN UPDATE SET *")
    assert [(c.kind, c.action) for c in s.clauses] == [("not_matched", "insert"), ("matched", "delete"),
                                                       ("not_matched_by_source", "delete"), ("matched", "update")]


def test_merge_aliases_and_a_subquery_source_kept_as_written():
    s = parse_statement("MERGE INTO db.t AS x USING (SELECT id, max(v) AS v FROM s GROUP BY id) AS y "
                        "ON x.id = y.id WHEN MATCHED THEN UPDATE SET x.v = y.v "
                        "WHEN NOT MATCHED THEN INSERT (x.id, `v`) VALUES (y.id, y.v)")
    assert s.alias == "x" and s.condition == "x.id = y.id"
    assert s.source.sql == "(SELECT id, max(v) AS v FROM s GROUP BY id) AS y"  # the user's text, not a rendering
    assert s.source.alias == "y" and s.source.tables == (TableRef(("s",)),)
    assert s.clauses[0].assignments == (("v", "y.v"),)
    assert s.clauses[1].assignments == (("id", "y.id"), ("v", "y.v"))


def test_merge_source_forms():
    s = parse_statement("MERGE INTO t USING db.src ON t.id = src.id WHEN MATCHED THEN DELETE")
    assert (s.source.sql, s.source.alias) == ("db.src", "src")
    s = parse_statement("MERGE INTO t USING (VALUES (1, 'a'), (2, 'b')) AS s(id, v) ON t.id = s.id "
                        "WHEN MATCHED THEN DELETE")
    assert (s.source.sql, s.source.alias, s.source.tables) == ("(VALUES (1, 'a'), (2, 'b')) AS s(id, v)", "s", ())
    s = parse_statement("MERGE INTO t USING acidorc.`/w/staging` ON t.id = 1 WHEN MATCHED THEN DELETE")
    assert (s.source.alias, s.source.tables) == (None, (TableRef(path="/w/staging"),))


def test_source_tables_skip_ctes_and_the_source_query_swaps_only_what_it_is_given():
    s = parse_statement(
        "MERGE INTO t USING (WITH c AS (SELECT 1 AS id) SELECT * FROM c JOIN db.u ON c.id = u.id "
        "JOIN acidorc.`/p` VERSION AS OF 3 AS z ON z.id = c.id JOIN plain ON plain.id = c.id) q "
        "ON t.id = q.id WHEN MATCHED THEN DELETE")
    u, p, plain = TableRef(("db", "u")), TableRef(path="/p", version=("VERSION", "3")), TableRef(("plain",))
    assert s.source.tables == (u, p, plain)
    assert source_query(s.source, {u: "v1", p: "v2"}) == (
        "SELECT * FROM (WITH c AS (SELECT 1 AS id) SELECT * FROM c JOIN v1 AS `u` ON c.id = u.id "
        "JOIN v2 AS z ON z.id = c.id JOIN plain ON plain.id = c.id) q")
    assert source_query(s.source, {}) == f"SELECT * FROM {s.source.sql}"


def test_source_query_for_a_bare_path_source():
    s = parse_statement("MERGE INTO t USING acidorc.`/w/s` TIMESTAMP AS OF '2024-05-01' AS s ON t.id = s.id "
                        "WHEN MATCHED THEN DELETE")
    ref = TableRef(path="/w/s", version=("TIMESTAMP", "2024-05-01"))
    assert s.source.tables == (ref,) and s.source.alias == "s"
    assert source_query(s.source, {ref: "view_1"}) == "SELECT * FROM view_1 AS s"


def test_time_travel_that_is_not_a_literal_cannot_be_swapped():
    s = parse_statement("MERGE INTO t USING acidorc.`/w/s` TIMESTAMP AS OF current_timestamp() AS s "
                        "ON t.id = s.id WHEN MATCHED THEN DELETE")
    (ref,) = s.source.tables
    assert ref.version == ("TIMESTAMP", "CURRENT_TIMESTAMP()")
    with pytest.raises(InvalidArgumentError, match="literal version or timestamp"):
        source_query(s.source, {ref: "v"})


# --- not ours ------------------------------------------------------------------------------------
@pytest.mark.parametrize("statement", [
    "SELECT * FROM t WHERE id = 1",
    "INSERT INTO t VALUES (1, 'a')",
    "INSERT OVERWRITE t SELECT * FROM s",
    "CREATE TEMPORARY VIEW v USING acidorc OPTIONS (path '/w/t')",
    "WITH c AS (SELECT 1) SELECT * FROM c",
    "EXPLAIN DELETE FROM t WHERE id = 1",
    "-- UPDATE t SET a = 1\nSELECT 1",
    "SHOW TABLES",
    "SELECT 'never closed",  # not ours even when it does not read: Spark reports it
    "SELEKT gibberish ((",
    "",
    "   ",
])
def test_anything_but_update_delete_merge_is_not_ours(statement):
    assert parse_statement(statement) is None


def test_non_strings_are_refused():
    with pytest.raises(InvalidArgumentError, match="expected a SQL statement string"):
        parse_statement(b"DELETE FROM t")  # type: ignore[arg-type]


# --- errors with positions -------------------------------------------------------------------
def test_parse_error_points_at_the_token():
    message = error_of("DELETE FROM t WHERE FORM x")
    assert "unexpected token" in message and "line 1, column 26" in message
    assert caret(message) == ("DELETE FROM t WHERE FORM x", " " * 25 + "^")


def test_parse_error_on_a_later_line():
    message = error_of("MERGE INTO t USING s ON t.id = s.id\nWHEN MATCHED THEN\n  UPDATE SET a = , b = 1")
    assert "near ','" in message and "line 3, column 18" in message
    assert caret(message) == ("  UPDATE SET a = , b = 1", " " * 17 + "^")


def test_caret_keeps_tabs_so_it_lines_up():
    message = error_of("UPDATE t\n\tSET a = 1 WHERE )")
    assert caret(message) == ("\tSET a = 1 WHERE )", "\t" + " " * 16 + "^")


def test_unterminated_string_points_at_its_start():
    message = error_of("UPDATE t SET a = 'abc WHERE id = 1")
    assert "unterminated" in message and "line 1, column 18" in message
    assert caret(message)[1] == " " * 17 + "^"


def test_semantic_errors_point_at_their_clause_or_column():
    message = error_of("MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN INSERT *")
    assert "WHEN MATCHED clauses can only UPDATE or DELETE, not INSERT" in message
    assert caret(message)[1] == " " * 36 + "^"
    message = error_of("MERGE INTO t USING s ON t.id = s.id\n"
                       "WHEN MATCHED THEN DELETE\nWHEN MATCHED AND s.x THEN DELETE")
    assert "only the last WHEN MATCHED clause can omit its condition" in message and "line 2, column 1" in message
    message = error_of("UPDATE t SET a = 1, A = 2")
    assert "'A' is assigned more than once" in message and caret(message)[1] == " " * 20 + "^"
    message = error_of("MERGE INTO t x USING s ON x.id = s.id WHEN MATCHED THEN UPDATE SET s.a = 1")
    assert "s.a is not a column of the target (qualified by x)" in message
    assert caret(message)[1] == " " * 67 + "^"


@pytest.mark.parametrize("statement, expected", [
    ("MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED BY SOURCE THEN UPDATE SET *", "cannot UPDATE SET *"),
    ("MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED THEN DELETE", "can only INSERT, not DELETE"),
    ("MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED THEN INSERT (a, b) VALUES (1)",
     "INSERT names 2 columns but gives 1 values"),
    ("MERGE INTO t USING s ON t.id = s.id", "at least one WHEN"),
    ("UPDATE t SET a = 1; SELECT 2", "expected one statement"),
    ("UPDATE t SET a = 1 FROM s", "UPDATE with FROM"),
    ("DELETE t WHERE id = 1", "DELETE needs FROM"),
    ("UPDATE t SET a = 1 LIMIT 3", "UPDATE with LIMIT"),
    ("UPDATE t AS x(a) SET a = 1", "alias cannot name columns"),
    ("UPDATE acidorc.`relative/dir` SET a = 1", "must be absolute"),
    ("UPDATE t SET a = " + "(" * 250 + "1" + ")" * 250, "nested more than 200 levels"),
])
def test_statements_spark_would_refuse_are_refused_with_a_position(statement, expected):
    message = error_of(statement)
    assert expected in message and "at line 1, column " in message and caret(message)[1].endswith("^")


def test_deep_but_allowed_nesting_parses():
    s = parse_statement("UPDATE t SET a = " + "(" * 150 + "1" + ")" * 150)
    assert s.assignments[0][0] == "a"


def test_statements_share_the_size_bound_of_every_sql_text():
    """One bound for every SQL text acidorc reads (issue 14); other statements are Spark's."""
    where = " OR ".join(f"id = {i}" for i in range(12_000))
    text = f"DELETE FROM t WHERE {where}"
    assert len(text) > 100_000
    with pytest.raises(InvalidArgumentError) as info:
        parse_statement(text)
    assert str(info.value) == (f"argument 'statement': the statement is {len(text)} characters long; at most "
                               "100000 are accepted")
    assert parse_statement(f"SELECT * FROM t WHERE {where}") is None


def test_the_error_pickles_with_its_message():
    with pytest.raises(InvalidArgumentError) as info:
        parse_statement("DELETE FROM t WHERE (")
    copy = pickle.loads(pickle.dumps(info.value))
    assert type(copy) is InvalidArgumentError and str(copy) == str(info.value) and copy.argument == "statement"


# --- the target of a statement that does not parse -----------------------------------------------
@pytest.mark.parametrize("statement, target", [
    ("DELETE FROM db.t WHERE (", TableRef(("db", "t"))),
    ("MERGE INTO acidorc.`/x` y USING", TableRef(path="/x")),
    ("UPDATE `a b`.c SET", TableRef(("a b", "c"))),
    ("UPDATE t SET a = 'open", TableRef(("t",))),
    ("MERGE WITH SCHEMA EVOLUTION INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE", None),
    ("DELETE", None),
    ("SELECT * FROM t", None),
])
def test_statement_target_is_best_effort(statement, target):
    assert statement_target(statement) == target


# --- literals mean what Spark reads, and Spark gets the user's text (issue 18) -------------------
def test_conditions_and_values_are_the_text_as_written():
    """Spark receives each condition and value exactly as the user wrote it: a re-generated text
    would carry sqlglot's reading of the literals (``'n''8'`` as ``CONCAT('n', '8')``)."""
    s = parse_statement("DELETE FROM acidorc.`/t` WHERE name = 'n''8'")
    assert s == DeleteStatement(TableRef(path="/t"), None, "name = 'n''8'")
    s = parse_statement("UPDATE t SET name = 'it''s; ok', n = -1L, `a``b` = X'0A' /* c */ "
                        "WHERE (a = 1) OR (b = 'x' \"y\") -- trailing\n;")
    assert s.assignments == (("name", "'it''s; ok'"), ("n", "-1L"), ("a`b", "X'0A'"))
    assert s.condition == "(a = 1) OR (b = 'x' \"y\")"
    s = parse_statement("MERGE INTO t USING s ON (t.id = s.id) AND s.v <> 'a\\'b' "
                        "WHEN MATCHED AND CASE WHEN s.x THEN 1 ELSE 2 END = 1 THEN UPDATE SET v = 'a''b', n = 1.5BD "
                        "WHEN NOT MATCHED AND s.v = r'\\d' THEN INSERT (id, v) VALUES (s.id, concat(s.v, '''')) "
                        "WHEN NOT MATCHED BY SOURCE AND t.v = '''' THEN DELETE")
    assert s.condition == "(t.id = s.id) AND s.v <> 'a\\'b'"
    assert s.clauses == (
        MergeClause("matched", "update", "CASE WHEN s.x THEN 1 ELSE 2 END = 1", (("v", "'a''b'"), ("n", "1.5BD"))),
        MergeClause("not_matched", "insert", "s.v = r'\\d'", (("id", "s.id"), ("v", "concat(s.v, '''')"))),
        MergeClause("not_matched_by_source", "delete", "t.v = ''''"),
    )


def test_a_doubled_quote_is_one_quote_in_names_and_paths():
    assert parse_statement("DELETE FROM acidorc.`/w/it``s` WHERE a = 1").target == TableRef(path="/w/it`s")
    assert parse_statement("UPDATE `my db`.`t``1` SET `x y` = 1").target == TableRef(("my db", "t`1"))


def test_clause_texts_are_cut_at_the_statements_own_keywords():
    s = parse_statement("MERGE INTO t USING (SELECT * FROM s WHERE a = 1) s ON t.id = s.id AND s.d BETWEEN 1 AND 2 "
                        "WHEN MATCHED AND s.n BETWEEN 1 AND 2 AND s.v IN ('a', 'b') THEN DELETE "
                        "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, CASE WHEN s.v = 'x' THEN 'y' END)")
    assert s.condition == "t.id = s.id AND s.d BETWEEN 1 AND 2"
    assert s.clauses[0].condition == "s.n BETWEEN 1 AND 2 AND s.v IN ('a', 'b')"
    assert s.clauses[1].assignments == (("id", "s.id"), ("v", "CASE WHEN s.v = 'x' THEN 'y' END"))
    s = parse_statement("UPDATE t SET a = b = c, d = (SELECT max(x) FROM u WHERE u.k = t.k) "
                        "WHERE k IN (SELECT k FROM w WHERE z)")
    assert s.assignments == (("a", "b = c"), ("d", "(SELECT max(x) FROM u WHERE u.k = t.k)"))
    assert s.condition == "k IN (SELECT k FROM w WHERE z)"
