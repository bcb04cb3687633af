"""Spark reads and writes an S3 table with nested storage options given as strings
(``fs.client_kwargs.endpoint_url``), and credentials appear in no plan, no view description
and no acidorc error message."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from servers.s3 import ACCESS_KEY, SECRET_KEY

from acid_source import AcidTable

pytestmark = pytest.mark.spark


def reader_options(s3_server) -> dict[str, str]:
    return {"fs.key": ACCESS_KEY, "fs.secret": SECRET_KEY, "fs.client_kwargs.endpoint_url": s3_server.endpoint}


def explained(df) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        df.explain(True)
    return out.getvalue()


def test_spark_writes_and_reads_s3_with_nested_options_and_no_credentials_in_plans(spark, s3_server, s3_table_url):
    options = reader_options(s3_server)
    data = spark.createDataFrame([(i, f"v{i}") for i in range(5)], "id bigint, v string")
    data.write.format("acidorc").mode("append").options(**options).save(s3_table_url)
    df = (spark.read.format("acidorc").options(**options)
          .option("storageOptions", json.dumps({"client_kwargs": {"region_name": "us-east-1"}, "anon": False}))
          .load(s3_table_url))
    assert sorted(r.id for r in df.collect()) == list(range(5))
    plan = explained(df) + df._jdf.queryExecution().toString()
    assert SECRET_KEY not in plan and ACCESS_KEY not in plan

    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW s3_view USING acidorc OPTIONS (path '{s3_table_url}', "
              + ", ".join(f"`{k}` '{v}'" for k, v in options.items()) + ")")
    assert spark.sql("SELECT count(*) AS n FROM s3_view").first().n == 5
    described = "\n".join(str(r) for r in spark.sql("EXPLAIN EXTENDED SELECT * FROM s3_view").collect())
    assert SECRET_KEY not in described
    ddl = "\n".join(str(r) for r in spark.sql(
        f"EXPLAIN CREATE OR REPLACE TEMPORARY VIEW s3_view2 USING acidorc OPTIONS (path '{s3_table_url}', "
        f"`fs.secret` '{SECRET_KEY}')").collect())
    assert SECRET_KEY not in ddl and "*********" in ddl  # Spark redacts an option named like a secret

    # AcidTable hands nested and typed options to Spark through the same encoding
    t = AcidTable.forPath(spark, s3_table_url, storageOptions={**s3_server.storage_options, "anon": False})
    assert t.toDF().count() == 5
    t.delete("id = 3")
    assert sorted(r.id for r in t.toDF().collect()) == [0, 1, 2, 4]


def test_a_secret_inside_the_json_option_is_refused_without_echoing_it(spark, s3_server, s3_table_url):
    leaky = json.dumps({"client_kwargs": {"endpoint_url": s3_server.endpoint, "aws_secret_access_key": SECRET_KEY}})
    with pytest.raises(Exception) as info:
        spark.read.format("acidorc").option("storageOptions", leaky).load(s3_table_url).collect()
    message = str(info.value)
    assert "storageOptions" in message and "aws_secret_access_key" in message
    assert SECRET_KEY not in message
    with pytest.raises(Exception) as info:
        spark.read.format("acidorc").option("storageOptions", '{"key": "' + SECRET_KEY + '"').load(s3_table_url)
    assert "not valid JSON" in str(info.value) and SECRET_KEY not in str(info.value)
