"""Constant values: SQL literal text to Python values, and Spark's CAST applied to constants.

Constants are converted once, while the expression is compiled, so a literal that cannot be a
date (or a number, ...) is reported to the user instead of failing on some row later. Values
are plain Python objects: int, float, decimal.Decimal, str, bytes, bool, datetime.date, and
naive datetime.datetime (wall-clock time; a literal with a zone offset is converted to UTC).
"""

from __future__ import annotations

import datetime as dt
import decimal
import fractions
import math
import re
import struct

import pyarrow as pa

from ..java_numbers import java_float_string
from . import sqltypes
from .sqltypes import MAX_DECIMAL_PRECISION, describe, integer_range

_DIGITS = frozenset("0123456789")
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_TRUE = frozenset({"t", "true", "y", "yes", "1"})
_FALSE = frozenset({"f", "false", "n", "no", "0"})
_DECIMAL_CONTEXT = decimal.Context(prec=100, rounding=decimal.ROUND_HALF_UP)


def _is_digits(text: str) -> bool:
    return all(ch in _DIGITS for ch in text)


def number_literal(text: str) -> tuple[object, pa.DataType]:
    """A number as Spark types its literal: int, else bigint, else decimal(p,0); with a point
    decimal(p,s); with an exponent double. ValueError if ``text`` is not a number."""
    s = text.strip()
    sign = ""
    if s[:1] in ("+", "-"):
        sign, s = s[0], s[1:]
    mantissa, exponent = s, None
    for marker in ("e", "E"):
        if marker in s:
            mantissa, exponent = s.split(marker, 1)
            break
    whole, point, fraction = mantissa.partition(".")
    if not (whole or fraction) or not _is_digits(whole) or not _is_digits(fraction):
        raise ValueError(f"{text!r} is not a number")
    if exponent is not None:
        digits = exponent[1:] if exponent[:1] in ("+", "-") else exponent
        if not digits or not _is_digits(digits):
            raise ValueError(f"{text!r} is not a number")
        double = float(sign + s)
        if math.isinf(double):
            raise ValueError(f"{text!r} is out of range for double")
        return double, pa.float64()
    if point:
        significant = len(whole.lstrip("0")) + len(fraction)
        precision, scale = max(significant, len(fraction), 1), len(fraction)
        exact = decimal.Decimal(sign + (whole or "0") + "." + fraction) if fraction else decimal.Decimal(sign + whole)
        if precision > MAX_DECIMAL_PRECISION:
            return float(exact), pa.float64()
        return exact, pa.decimal128(precision, scale)
    integer = int(sign + whole)
    for t in (pa.int32(), pa.int64()):
        lo, hi = integer_range(t)
        if lo <= integer <= hi:
            return integer, t
    width = len(whole.lstrip("0"))
    if width > MAX_DECIMAL_PRECISION:
        raise ValueError(f"{text!r} has more than {MAX_DECIMAL_PRECISION} digits")
    return decimal.Decimal(integer), pa.decimal128(width, 0)


_SUFFIX_TYPES = {"L": pa.int64(), "S": pa.int16(), "Y": pa.int8()}
#: the bounds Spark checks F and D literals (and exponents) against: Scala BigDecimals of the
#: types' largest values as Double.toString writes them
_MAX_DOUBLE = decimal.Decimal("1.7976931348623157E+308")
_MAX_FLOAT = decimal.Decimal("3.4028234663852886E+38")


def sql_number(text: str) -> tuple[object, pa.DataType]:
    """A numeric literal of Spark SQL as written, with its sign (``-1.5``, ``12``, ``.5``, ``1e3``,
    ``1L``, ``1.5F``, ``2BD`` ...; see :mod:`.lexer`), typed as Spark's parser types it: an integer
    is int, else bigint, else decimal(p,0); with a point decimal(p,s); with an exponent double;
    ``L`` ``S`` ``Y`` ``F`` ``D`` ``BD`` bigint, smallint, tinyint, float, double, decimal.
    ValueError where Spark refuses the literal: out of its type's range, more than 38 digits."""
    sign, body = ("-", text[1:]) if text.startswith("-") else ("", text)
    upper = body.upper()
    suffix = "BD" if upper.endswith("BD") else upper[-1:] if upper[-1:] in ("L", "S", "Y", "F", "D") else ""
    number = upper[:len(upper) - len(suffix)]
    mantissa, has_power, power = number.partition("E")
    whole, point, fraction = mantissa.partition(".")
    power_digits = power[1:] if power[:1] in ("+", "-") else power
    if (not (whole or fraction) or not _is_digits(whole + fraction)
            or (has_power and not (power_digits and _is_digits(power_digits)))
            or (suffix in _SUFFIX_TYPES and (point or has_power))):
        raise ValueError(f"{text!r} is not a numeric literal")
    exact = decimal.Decimal(sign + number)
    if suffix in _SUFFIX_TYPES:
        target = _SUFFIX_TYPES[suffix]
        lo, hi = integer_range(target)
        if not lo <= exact <= hi:
            raise ValueError(f"numeric literal {sign}{number} is outside the valid range for {describe(target)} "
                             f"({lo} to {hi})")
        return int(exact), target
    if suffix == "F":
        if exact.copy_abs() > _MAX_FLOAT:
            raise ValueError(f"numeric literal {sign}{number} is outside the valid range for float")
        return _nearest_float(exact), pa.float32()
    if suffix == "D" or (has_power and suffix != "BD"):
        if exact.copy_abs() > _MAX_DOUBLE:
            raise ValueError(f"numeric literal {sign}{number} is outside the valid range for double")
        return float(sign + number), pa.float64()
    if not point and not suffix:
        integer = int(exact)
        for t in (pa.int32(), pa.int64()):
            lo, hi = integer_range(t)
            if lo <= integer <= hi:
                return integer, t
    return _decimal_literal(exact, text)


def _decimal_literal(exact: decimal.Decimal, text: str) -> tuple[decimal.Decimal, pa.DataType]:
    """Spark's type of a literal Java BigDecimal: decimal(max(precision, scale), scale), a
    negative scale (``1E2BD``) set to 0; more than 38 digits is an error."""
    if exact == 0:
        exact = exact.copy_abs()  # BigDecimal has no negative zero
    _, digits, exponent = exact.as_tuple()
    if not isinstance(exponent, int):
        raise ValueError(f"{text!r} is not a numeric literal")
    if exponent > 0:
        exact = decimal.Decimal(int(exact))
        _, digits, exponent = exact.as_tuple()
        assert isinstance(exponent, int)  # a finite Decimal's exponent
    scale = -exponent
    precision = max(len(digits), scale, 1)
    if precision > MAX_DECIMAL_PRECISION:
        raise ValueError(f"the literal {text} needs decimal precision {precision}, more than the "
                         f"{MAX_DECIMAL_PRECISION} Spark allows")
    return exact, pa.decimal128(precision, scale)


def _nearest_float(exact: decimal.Decimal) -> float:
    """Java's Float.parseFloat: the 32-bit float nearest to ``exact``, ties to even, in one
    rounding (through a double first, a decimal can round twice)."""
    magnitude = fractions.Fraction(exact.copy_abs())  # abs() would round to the context precision
    guess = _float32_bits(float(magnitude))
    best = min((b for b in (guess - 1, guess, guess + 1) if 0 <= b < 0x7F800000),
               key=lambda b: (abs(fractions.Fraction(_bits_float32(b)) - magnitude), b & 1))
    return math.copysign(_bits_float32(best), -1.0 if exact.is_signed() else 1.0)


def _float32_bits(value: float) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0]


def _bits_float32(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def hex_literal(text: str) -> bytes:
    """Spark's ``X'...'``: hex digits (an odd count is read with a leading 0). ValueError if
    ``text`` holds anything else."""
    if any(ch not in _HEX_DIGITS for ch in text):
        raise ValueError(f"X{text!r} is not a binary literal: it may hold hex digits only")
    return bytes.fromhex(("0" if len(text) % 2 else "") + text)


def parse_boolean(text: str) -> bool:
    word = text.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise ValueError(f"{text!r} is not a boolean")


def _date_fields(text: str, original: str) -> dt.date:
    parts = text.split("-")
    if not 1 <= len(parts) <= 3 or len(parts[0]) != 4 or any(
            not p or not _is_digits(p) or len(p) > (4 if i == 0 else 2) for i, p in enumerate(parts)):
        raise ValueError(f"{original!r} is not a date (expected yyyy-mm-dd)")
    year, month, day = (int(p) for p in parts + ["1"] * (3 - len(parts)))
    try:
        return dt.date(year, month, day)
    except ValueError as exc:
        raise ValueError(f"{original!r} is not a date: {exc}") from None


def parse_date(text: str) -> dt.date:
    """Spark's string-to-date: ``yyyy``, ``yyyy-[m]m``, ``yyyy-[m]m-[d]d``, anything after a
    space or ``T`` ignored."""
    s = text.strip()
    for i, ch in enumerate(s):
        if ch in (" ", "T"):
            s = s[:i]
            break
    return _date_fields(s, text)


def _zone_offset(zone: str, original: str, local: dt.datetime) -> dt.timedelta:
    upper = zone.upper()
    for prefix in ("UTC", "GMT", "UT"):
        if upper.startswith(prefix) and (len(zone) == len(prefix) or zone[len(prefix)] in "+-"):
            zone = zone[len(prefix):]
            if not zone:
                return dt.timedelta(0)
            break
    if zone in ("Z", "z"):
        return dt.timedelta(0)
    if zone[:1] in ("+", "-"):
        sign = -1 if zone[0] == "-" else 1
        body = zone[1:].replace(":", "")
        if _is_digits(body) and len(body) in (1, 2, 4):
            hours, minutes = (int(body), 0) if len(body) <= 2 else (int(body[:2]), int(body[2:]))
            if hours <= 18 and minutes < 60:
                return sign * dt.timedelta(hours=hours, minutes=minutes)
        raise ValueError(f"{original!r} has an invalid zone offset {zone!r}")
    try:
        from zoneinfo import ZoneInfo

        return ZoneInfo(zone).utcoffset(local) or dt.timedelta(0)
    except Exception:  # unknown region name or no time zone database
        raise ValueError(f"{original!r} has an unknown time zone {zone!r}") from None


def parse_timestamp(text: str) -> dt.datetime:
    """Spark's string-to-timestamp: ``yyyy-[m]m-[d]d[( |T)[h]h[:[m]m[:[s]s[.fraction]]]][zone]``.

    Without a zone the wall-clock time is returned; with one (``Z``, ``+02:00``, ``UTC``, a
    region name) the time converted to UTC. Fractions beyond microseconds are truncated.
    """
    s = text.strip()
    split = next((i for i, ch in enumerate(s) if ch in (" ", "T")), len(s))
    try:
        date = _date_fields(s[:split], text)
    except ValueError:
        raise ValueError(f"{text!r} is not a timestamp (expected yyyy-mm-dd hh:mm:ss[.ffffff])") from None
    rest = s[split + 1:]
    end = 0
    while end < len(rest) and (rest[end] in _DIGITS or rest[end] in ":."):
        end += 1
    clock, zone = rest[:end], rest[end:].strip()
    hour = minute = second = micro = 0
    if clock:
        fields = clock.split(":")
        seconds, _, fraction = fields[-1].partition(".")
        fields[-1] = seconds
        if (len(fields) > 3 or any(not f or len(f) > 2 or not _is_digits(f) for f in fields)
                or not _is_digits(fraction) or len(fraction) > 9 or ("." in clock and len(fields) != 3)):
            raise ValueError(f"{text!r} is not a timestamp (expected yyyy-mm-dd hh:mm:ss[.ffffff])")
        hour, minute, second = (int(f) for f in fields + ["0"] * (3 - len(fields)))
        micro = int((fraction + "000000")[:6])
    elif zone and split < len(s):
        raise ValueError(f"{text!r} is not a timestamp (expected yyyy-mm-dd hh:mm:ss[.ffffff])")
    try:
        local = dt.datetime(date.year, date.month, date.day, hour, minute, second, micro)
    except ValueError as exc:
        raise ValueError(f"{text!r} is not a timestamp: {exc}") from None
    if zone:
        return local - _zone_offset(zone, text, local)
    return local


_JAVA_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[fFdD]?")
_JAVA_HEX = re.compile(r"[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?\d+[fFdD]?")
_JAVA_WORDS = {"NaN": math.nan, "+NaN": math.nan, "-NaN": math.nan, "Infinity": math.inf, "+Infinity": math.inf,
               "-Infinity": -math.inf}
#: what Spark reads when Java's grammar refuses the text (lower-cased)
_SPARK_WORDS = {"inf": math.inf, "+inf": math.inf, "infinity": math.inf, "+infinity": math.inf, "-inf": -math.inf,
                "-infinity": -math.inf, "nan": math.nan}
_JAVA_WHITESPACE = "".join(map(chr, range(33)))  # what Java's String.trim removes


def java_double(text: str) -> float:
    """Spark's CAST of a string to double: Java's Double.parseDouble (a decimal or hex number,
    an optional d / f suffix, NaN and Infinity with a sign; too large is infinite), then Spark's
    words inf, +inf, infinity, nan ... in any case. ValueError for anything else."""
    s = text.strip(_JAVA_WHITESPACE)
    if s in _JAVA_WORDS:
        return _JAVA_WORDS[s]
    if _JAVA_DECIMAL.fullmatch(s):
        return float(s.rstrip("fFdD"))
    if _JAVA_HEX.fullmatch(s):
        return float.fromhex(s.rstrip("fFdD"))  # the exponent ends in a decimal digit
    if s.lower() in _SPARK_WORDS:
        return _SPARK_WORDS[s.lower()]
    raise ValueError(f"{text!r} is not a number")


def _to_text(value, source: pa.DataType) -> str:
    if sqltypes.is_string(source):
        return value
    if sqltypes.is_boolean(source):
        return "true" if value else "false"
    if sqltypes.is_decimal(source):
        return format(value, "f")
    if sqltypes.is_floating(source):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return java_float_string(float(value), single=source.bit_width == 32)
    if sqltypes.is_integral(source):
        return str(value)
    if sqltypes.is_timestamp(source):
        text = value.strftime("%Y-%m-%d %H:%M:%S")
        return text + (f".{value.microsecond:06d}".rstrip("0") if value.microsecond else "")
    if sqltypes.is_date(source):
        return value.isoformat()
    if sqltypes.is_binary(source):
        return bytes(value).decode("utf-8", errors="replace")
    raise ValueError(f"cannot cast {describe(source)} to string")


_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")


def _to_number(value, source: pa.DataType):
    """A Python number (int, float or Decimal) for a numeric, boolean or string constant."""
    if sqltypes.is_string(source):
        word = value.strip().lower()
        special = {"nan": math.nan, "infinity": math.inf, "inf": math.inf,
                   "+infinity": math.inf, "-infinity": -math.inf, "-inf": -math.inf}
        if word in special:
            return special[word]
        return number_literal(value)[0]
    if sqltypes.is_boolean(source):
        return int(value)
    if sqltypes.is_numeric(source):
        return value
    raise ValueError(f"cannot cast {describe(source)} to a number")


def cast_value(value, source: pa.DataType, target: pa.DataType):
    """Spark's ``CAST(value AS target)`` for one constant; ValueError where Spark (in ANSI mode)
    would fail: a malformed string, a value out of the target's range."""
    if value is None or source == target or sqltypes.is_null(source):
        return value
    if sqltypes.is_string(target):
        return _to_text(value, source)
    if sqltypes.is_binary(target):
        if sqltypes.is_string(source):
            return value.encode("utf-8")
        if sqltypes.is_binary(source):
            return bytes(value)
    elif sqltypes.is_boolean(target):
        if sqltypes.is_string(source):
            return parse_boolean(value)
        if sqltypes.is_numeric(source):
            return value != 0
    elif sqltypes.is_integral(target):
        if sqltypes.is_string(source) and not _INTEGER_TEXT.fullmatch(value.strip("".join(map(chr, range(33))))):
            # Spark 4 reads a sign and digits only ("1.5", "1e3" are CAST_INVALID_INPUT)
            raise ValueError(f"{value!r} is not an integer")
        number = _to_number(value, source)
        if isinstance(number, float) and not math.isfinite(number):
            raise ValueError(f"{_to_text(value, source)} is out of range for {describe(target)}")
        result = int(number)  # truncates towards zero, as Spark does
        lo, hi = integer_range(target)
        if not lo <= result <= hi:
            raise ValueError(f"{_to_text(value, source)} is out of range for {describe(target)}")
        return result
    elif sqltypes.is_floating(target):
        number = java_double(value) if sqltypes.is_string(source) else float(_to_number(value, source))
        if target.bit_width == 32:
            number = pa.scalar(number, pa.float32()).as_py()
        return number
    elif sqltypes.is_decimal(target):
        return _to_decimal(value, source, target)
    elif sqltypes.is_date(target):
        if sqltypes.is_string(source):
            return parse_date(value)
        if sqltypes.is_timestamp(source):
            return value.date()
        if sqltypes.is_date(source):
            return value
    elif sqltypes.is_timestamp(target):
        if sqltypes.is_string(source):
            return parse_timestamp(value)
        if sqltypes.is_date(source):
            return dt.datetime(value.year, value.month, value.day)
        if sqltypes.is_timestamp(source):
            return value
    raise ValueError(f"cannot cast {describe(source)} to {describe(target)}")


def _to_decimal(value, source: pa.DataType, target: pa.DataType) -> decimal.Decimal:
    if sqltypes.is_string(source):
        number_literal(value)  # validates the text
        number = decimal.Decimal(value.strip())
    else:
        number = _to_number(value, source)
        if isinstance(number, float):
            if not math.isfinite(number):
                raise ValueError(f"{_to_text(value, source)} is out of range for {describe(target)}")
            number = decimal.Decimal(repr(number))
        number = decimal.Decimal(number)
    quantum = decimal.Decimal(1).scaleb(-target.scale)
    result = number.quantize(quantum, context=_DECIMAL_CONTEXT)
    if abs(result) >= decimal.Decimal(10) ** (target.precision - target.scale):
        raise ValueError(f"{_to_text(value, source)} is out of range for {describe(target)}")
    return result


def to_scalar(value, target: pa.DataType) -> pa.Scalar:
    """The Arrow scalar of a converted constant (a naive datetime is UTC for a zoned type)."""
    return pa.scalar(value, type=target)
