from acid_source.layout.names import (
    base_dir_name,
    bucket_file_name,
    delta_dir_name,
    parse_bucket_file,
    parse_dir_name,
)


def test_dir_names_round_trip():
    assert base_dir_name(5) == "base_0000005"
    assert base_dir_name(5, 123) == "base_0000005_v0000123"
    assert delta_dir_name(7, 7, 0) == "delta_0000007_0000007_0000"
    assert delta_dir_name(5, 10, None, 123) == "delta_0000005_0000010_v0000123"
    assert delta_dir_name(7, 7, 1, delete=True) == "delete_delta_0000007_0000007_0001"
    for name in ["base_0000005", "base_0000005_v0000123", "delta_0000007_0000007_0000",
                 "delta_0000005_0000010_v0000123", "delete_delta_0000007_0000007_0001", "delta_0000005_0000010"]:
        assert parse_dir_name(name).name == name


def test_parse_fields():
    d = parse_dir_name("delete_delta_0000006_0000010_v0000100")
    assert (d.kind, d.min_write_id, d.max_write_id, d.statement_id, d.visibility_txn_id) == (
        "delete_delta", 6, 10, -1, 100)
    d = parse_dir_name("delta_0000007_0000007_0003")
    assert (d.kind, d.statement_id, d.visibility_txn_id) == ("delta", 3, 0)
    b = parse_dir_name("base_12345678901")  # widths are not enforced, as in Hive
    assert b.is_base and b.write_id == 12345678901


def test_non_acid_names():
    for name in ["000000_0", "HIVE_UNION_SUBDIR_1", "delta_x_y", "base_", "delta_0000005", "ds=2024-01-01",
                 "delta_0000009_0000005"]:
        assert parse_dir_name(name) is None


def test_delta_order_matches_hive():
    # min asc, max desc, stmt asc (none first), then path: delete_delta before delta
    names = ["delta_0000011_0000020", "delta_0000005_0000010", "delta_0000051_0000060", "delta_0000005_0000020",
             "delta_0000007_0000007_0001", "delta_0000007_0000007_0000", "delete_delta_0000007_0000007_0000"]
    ordered = sorted(names, key=lambda n: parse_dir_name(n).sort_key("/t/" + n))
    assert ordered == ["delta_0000005_0000020", "delta_0000005_0000010", "delete_delta_0000007_0000007_0000",
                       "delta_0000007_0000007_0000", "delta_0000007_0000007_0001", "delta_0000011_0000020",
                       "delta_0000051_0000060"]


def test_bucket_files():
    assert bucket_file_name(3) == "bucket_00003"
    assert parse_bucket_file("bucket_00003").bucket_id == 3
    attempt = parse_bucket_file("bucket_00003_1")
    assert attempt.bucket_id == 3 and attempt.is_acid_name
    original = parse_bucket_file("000002_0_copy_10")
    assert (original.bucket_id, original.copy_number, original.is_acid_name) == (2, 10, False)
    assert parse_bucket_file("part1.csv").bucket_id == -1


def test_only_ascii_digits_that_fit_java_numbers_are_ids():
    from acid_source.layout.names import acid_dir_name_problem

    assert parse_dir_name("base_٣") is None and "base_" in acid_dir_name_problem("base_٣")
    assert parse_dir_name("delta_1_1_2147483648") is None  # statement ids are Java ints
    assert parse_dir_name(f"base_{2**63}") is None and parse_dir_name(f"base_{2**63 - 1}").write_id == 2**63 - 1
    assert acid_dir_name_problem("delta_0000005_0000003").endswith("below min write id 5")
    assert acid_dir_name_problem("000000_0") is None and acid_dir_name_problem("HIVE_UNION_SUBDIR_1") is None
    assert parse_bucket_file("bucket_٣").bucket_id == -1
    assert parse_bucket_file("bucket_2147483648").bucket_id == -1
    assert parse_bucket_file("bucket_00001\n").bucket_id == -1
