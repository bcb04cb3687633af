# Shared set-up for scripts/run-example, scripts/run-tests and scripts/check (sourced, not run).
# Creates .venv on first use, (re)installs the project when pyproject.toml changes, checks
# Java, and points Spark's Python workers at the same interpreter as the driver.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${ACIDORC_VENV:-$ROOT/.venv}"
PYTHON_BOOT="${PYTHON:-python3}"

die() { echo "error: $*" >&2; exit 1; }

command -v "$PYTHON_BOOT" >/dev/null 2>&1 || die "python3 (>= 3.10) is required"
"$PYTHON_BOOT" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' \
  || die "Python >= 3.10 is required (found $("$PYTHON_BOOT" --version 2>&1))"

if ! command -v java >/dev/null 2>&1 && [ -z "${JAVA_HOME:-}" ]; then
  die "Java 17 or newer is required by Spark: install a JDK (e.g. 'apt-get install openjdk-17-jdk-headless') or set JAVA_HOME"
fi
JAVA_BIN="${JAVA_HOME:+$JAVA_HOME/bin/}java"
JAVA_MAJOR="$("$JAVA_BIN" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1)"
[ -n "$JAVA_MAJOR" ] && [ "$JAVA_MAJOR" -ge 17 ] \
  || die "Java 17 or newer is required by Spark (found: $("$JAVA_BIN" -version 2>&1 | head -n1))"

if [ ! -x "$VENV/bin/python" ]; then
  echo "==> creating virtual environment in $VENV"
  "$PYTHON_BOOT" -m venv "$VENV"
fi
STAMP="$VENV/.acidorc-installed"
WANT="$(cat "$ROOT/pyproject.toml" | sha256sum | cut -d' ' -f1)"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
  echo "==> installing acidorc and its dependencies into $VENV"
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  "$VENV/bin/python" -m pip install --quiet -e "$ROOT[test]"
  echo "$WANT" > "$STAMP"
fi

# PostgreSQL for the store tests on a real server (tests/servers/postgres.py): Debian's package,
# installed by the test command only (the example and the checks do not need it)
if [ "$(basename "$0")" = "run-tests" ] && ! compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null \
    && [ -z "${ACIDORC_PG_BINDIR:-}" ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "==> installing PostgreSQL (apt-get install postgresql) for the transaction store tests"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; } >/dev/null \
      || die "could not install PostgreSQL with apt-get; the store tests need it (initdb, pg_ctl, postgres)"
  else
    die "PostgreSQL is required by the transaction store tests: install it ('apt-get install postgresql' as root) or set ACIDORC_PG_BINDIR to a directory holding initdb, pg_ctl and postgres"
  fi
fi

# Hive 4.1 for the Hive Metastore tests (tests/servers/hive_metastore.py) and the Hive 4 interop
# tests: scripts/fetch-hive4 fetches it from Maven Central once (needs Maven, installed here as
# root like PostgreSQL) and does nothing afterwards. The test command only.
if [ "$(basename "$0")" = "run-tests" ]; then
  if ! command -v mvn >/dev/null 2>&1 && [ ! -f "${ACIDORC_HIVE4_HOME:-$ROOT/.cache/hive4}/.fetched" ]; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "==> installing Maven (apt-get install maven) to fetch Hive 4 for the Hive Metastore tests"
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq maven; } >/dev/null \
        || die "could not install Maven with apt-get; scripts/fetch-hive4 needs it to fetch Hive 4"
    else
      die "Maven is required to fetch Hive 4 for the Hive Metastore tests (scripts/fetch-hive4): apt-get install maven"
    fi
  fi
  "$ROOT/scripts/fetch-hive4" || die "could not fetch Hive 4 (scripts/fetch-hive4, above); the Hive Metastore tests need it"
fi

export PYSPARK_PYTHON="$VENV/bin/python"
export PYSPARK_DRIVER_PYTHON="$VENV/bin/python"
PY="$VENV/bin/python"
cd "$ROOT"
