"""``acid_source.sql(spark, statement)``: all of a user's Spark SQL, with UPDATE / DELETE /
MERGE on acidorc tables.

Spark SQL does not route row-level DML to a Python data source ("Table does not support
deletes"), so this entry point parses the statement itself
(:mod:`acid_source.expressions.statements`). UPDATE / DELETE / MERGE whose target is an acidorc
table - registered in the transaction store by name, written ``acidorc.`/path```, or a
temporary view that plainly reads one - run through the ``AcidTable`` builder and return its
metrics dict; their conditions and values reach the builder (and so Spark) exactly as the user
wrote them, so every literal means what Spark SQL reads. Every other statement (and DML on any
other table) goes to ``spark.sql`` unchanged, and its DataFrame comes back, so users can route
all their SQL through here.
"""

from __future__ import annotations

import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

from pyspark.errors import AnalysisException

from ..errors import InvalidArgumentError, TableNotRegisteredError, UnsupportedOperationError
from ..expressions.statements import (
    DELETE,
    INSERT,
    MATCHED,
    NOT_MATCHED,
    UPDATE,
    DeleteStatement,
    MergeSource,
    MergeStatement,
    TableRef,
    UpdateStatement,
    parse_statement,
    source_query,
    statement_target,
)
from ..metastore.urls import url_for_workers
from ..resolve import open_store
from .datasource import SOURCE_NAME
from .native_read import read
from .options import storage_options_from

#: read options under which a view shows other rows than the table's latest snapshot
_SNAPSHOT_OPTIONS = ("versionAsOf", "timestampAsOf", "validWriteIds", "validTxns", "partitionFilter")
_VIEW_PREFIX = "__acidorc_sql_source_"


@dataclass(frozen=True)
class _Target:
    """An acidorc table a statement changes: by store name, or by location."""

    name: str | None = None
    path: str | None = None
    metastore_url: str | None = None
    storage_options: dict = field(default_factory=dict)

    def open(self, spark, conflict_detection: str | None):
        from ..table import AcidTable

        if self.name is not None:
            return AcidTable.forName(spark, self.name, metastoreUrl=self.metastore_url,
                                     conflictDetection=conflict_detection)
        assert self.path is not None  # a target has a name or a path
        return AcidTable.forPath(spark, self.path, metastoreUrl=self.metastore_url,
                                 storageOptions=self.storage_options or None, conflictDetection=conflict_detection)


def sql(spark, statement: str, *, metastoreUrl: str | None = None, conflictDetection: str | None = None) -> Any:
    """Run one Spark SQL statement. UPDATE / DELETE / MERGE on an acidorc table return the
    metrics dict of the write (``operation``, ``writeId``, ``numUpdatedRows``, ...); anything
    else returns what ``spark.sql(statement)`` returns.

    >>> acid_source.sql(spark, "DELETE FROM acidorc.`/warehouse/sales` WHERE day < '2024-01-01'")  # doctest: +SKIP
    >>> acid_source.sql(spark, '''MERGE INTO db.sales t USING updates s ON t.id = s.id
    ...     WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *''')              # doctest: +SKIP
    """
    try:
        parsed = parse_statement(statement)
    except InvalidArgumentError:
        # ours to report only when the statement is aimed at an acidorc table; else Spark's
        ref = statement_target(statement)
        if ref is None or _resolve(spark, ref, metastoreUrl, "DML") is None:
            return spark.sql(statement)
        raise
    if parsed is None:
        return spark.sql(statement)
    operation = {UpdateStatement: "UPDATE", DeleteStatement: "DELETE", MergeStatement: "MERGE"}[type(parsed)]
    target = _resolve(spark, parsed.target, metastoreUrl, operation)
    if target is None:
        return spark.sql(statement)
    if parsed.target.version is not None:
        kind, value = parsed.target.version
        raise UnsupportedOperationError(operation, f"{parsed.target.name} {kind} AS OF {value}: UPDATE, DELETE and "
                                                   "MERGE change the table's latest snapshot; drop the time travel")
    table = target.open(spark, conflictDetection)
    if parsed.alias:
        table = table.alias(parsed.alias)
    if isinstance(parsed, UpdateStatement):
        return table.update(parsed.condition, dict(parsed.assignments))
    if isinstance(parsed, DeleteStatement):
        return table.delete(parsed.condition)
    with _source_frame(spark, parsed.source, metastoreUrl) as source:
        builder = table.merge(source, parsed.condition)
        for clause in parsed.clauses:
            builder = _add_clause(builder, clause)
        return builder.execute()


def _add_clause(builder, clause):
    values = dict(clause.assignments) if not clause.star else None
    if clause.kind == MATCHED:
        if clause.action == DELETE:
            return builder.whenMatchedDelete(clause.condition)
        if clause.star:
            return builder.whenMatchedUpdateAll(clause.condition)
        return builder.whenMatchedUpdate(clause.condition, set=values)
    if clause.kind == NOT_MATCHED:
        assert clause.action == INSERT  # the parser allows nothing else here
        if clause.star:
            return builder.whenNotMatchedInsertAll(clause.condition)
        return builder.whenNotMatchedInsert(clause.condition, values=values)
    if clause.action == UPDATE:
        return builder.whenNotMatchedBySourceUpdate(clause.condition, set=values)
    return builder.whenNotMatchedBySourceDelete(clause.condition)


# --- which table a name means ----------------------------------------------------------------
def _resolve(spark, ref: TableRef, metastore_url: str | None, operation: str) -> _Target | None:
    """The acidorc table ``ref`` means, or None when it is not one (then Spark runs the
    statement). Spark's order: a temporary view shadows a table of the same name; then the
    transaction store's names; then Spark's catalog."""
    if ref.path is not None:
        return _Target(path=ref.path, metastore_url=metastore_url)
    plan = _analyzed(spark, ref.parts)
    if plan is not None and _is_temp_view(plan):
        return _from_plan(plan, ref, metastore_url, operation)
    name = _registered_name(spark, ref.parts, metastore_url)
    if name is not None:
        return _Target(name=name, metastore_url=metastore_url)
    return _from_plan(plan, ref, metastore_url, operation) if plan is not None else None


def _registered_name(spark, parts: tuple[str, ...], metastore_url: str | None) -> str | None:
    """The name ``parts`` is registered under in the store (an unqualified name also in
    Spark's current database), or None."""
    if len(parts) > 2:
        return None
    store = open_store(metastore_url)
    if store is None:
        return None
    candidates = [".".join(parts)]
    if len(parts) == 1:
        candidates.append(f"{spark.catalog.currentDatabase()}.{parts[0]}")
    for name in candidates:
        try:
            store.get_table(name=name)
            return name
        except (TableNotRegisteredError, InvalidArgumentError):  # not there, or not a name the store allows
            continue
    return None


def _analyzed(spark, parts: tuple[str, ...]):
    """The analyzed JVM plan of the table or view ``parts`` names, or None if Spark knows none."""
    name = ".".join("`" + p.replace("`", "``") + "`" for p in parts)
    try:
        return spark.table(name)._jdf.queryExecution().analyzed()
    except AnalysisException:
        return None


def _is_temp_view(plan) -> bool:
    node = plan
    while _simple_name(node) == "SubqueryAlias":
        node = node.child()
    return _simple_name(node) == "View" and bool(node.isTempView())


def _from_plan(plan, ref: TableRef, metastore_url: str | None, operation: str) -> _Target | None:
    """The acidorc table a view (or catalog table) reads, if it is nothing but a read of one;
    a view that filters, projects or joins one is refused (the change would have to reach the
    table through it); one that reads no acidorc table is Spark's business."""
    node = plan
    while _simple_name(node) in ("SubqueryAlias", "View"):
        node = node.child()
    if not _is_acidorc_read(node):
        if _contains_acidorc_read(plan):
            raise UnsupportedOperationError(
                operation, f"{ref.name} is a view that does more than read an acidorc table (it has a "
                           f"{_simple_name(node)}); {operation} needs the table itself: name it as "
                           "acidorc.`/path/to/table`, by its registered name, or through a view of the plain read")
        return None
    options = {str(k): str(v) for k, v in dict(node.options().asCaseSensitiveMap()).items()}
    by_lower = {k.lower(): k for k in options}
    for option in _SNAPSHOT_OPTIONS:
        if option.lower() in by_lower:
            value = options[by_lower[option.lower()]]
            raise UnsupportedOperationError(
                operation, f"{ref.name} reads the table with {option}={value!r}, so it shows other rows than the "
                           f"latest snapshot that {operation} changes; use the table itself or a view without "
                           f"{option}")
    path = options.get(by_lower.get("path", ""))
    if not path:
        raise UnsupportedOperationError(operation, f"{ref.name} reads an acidorc table without a single 'path' "
                                                   "option; name the table itself")
    url = options.get(by_lower.get("metastoreurl", ""))
    if url is not None and metastore_url is not None and url.strip() != metastore_url.strip():
        raise InvalidArgumentError("metastoreUrl", f"{metastore_url!r} differs from the store {url!r} that the view "
                                                   f"{ref.name} reads its table with")
    storage = dict(storage_options_from(options))
    return _Target(path=path, metastore_url=url if url is not None else metastore_url, storage_options=storage)


def _is_acidorc_read(node) -> bool:
    if _simple_name(node) != "DataSourceV2Relation":
        return False
    table = node.table()
    return _simple_name(table) == "PythonTable" and str(table.name()).lower() == SOURCE_NAME


def _contains_acidorc_read(plan) -> bool:
    pending = [plan]
    while pending:
        node = pending.pop()
        if _is_acidorc_read(node):
            return True
        children = node.children()
        pending.extend(children.apply(i) for i in range(children.size()))
    return False


def _simple_name(jobject) -> str:
    return str(jobject.getClass().getSimpleName())


# --- the MERGE source ------------------------------------------------------------------------
@contextmanager
def _source_frame(spark, source: MergeSource, metastore_url: str | None) -> Iterator[Any]:
    """The source as a DataFrame under its alias. Spark cannot read ``acidorc.`/path``` in SQL,
    nor knows the store's names, so such tables become temporary views for the statement's
    duration (dropped afterwards)."""
    views: dict[TableRef, str] = {}
    try:
        for ref in source.tables:
            location = ref.path
            if location is None and _analyzed(spark, ref.parts) is None:
                name = _registered_name(spark, ref.parts, metastore_url)
                if name is not None:
                    store = open_store(metastore_url)
                    assert store is not None  # the name was found in it
                    location = store.get_table(name=name).location
            if location is None:
                continue  # Spark's to resolve (or to report)
            options = {}
            url = url_for_workers(metastore_url)
            if url is not None:
                options["metastoreUrl"] = url
            if ref.version is not None:
                kind, value = ref.version
                options["versionAsOf" if kind == "VERSION" else "timestampAsOf"] = value
            view = _VIEW_PREFIX + uuid.uuid4().hex
            read(spark, location, **options).createOrReplaceTempView(view)
            views[ref] = view
        frame = spark.sql(source_query(source, views))
        yield frame.alias(source.alias) if source.alias else frame
    finally:
        for view in views.values():
            spark.catalog.dropTempView(view)
