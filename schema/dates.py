"""The one date/time parser every face uses (Python `Memory`, GraphQL, CLI, MCP).

`parse_instant(value, field)` turns what a caller sent into a timezone-aware UTC `datetime`, or
refuses it with a `BadInputError` naming `field` — the caller passes the field as its own face
spells it (`valid_from` in Python, `validFrom` in GraphQL). docs/dates.md is the user-facing table.

Accepted:

* an ISO-8601 / RFC 3339 date-time **with** a zone — `2017-07-25T10:00:00Z`,
  `2017-07-25T12:00:00+02:00`, `2017-07-25 10:00Z`, fractions of a second — converted to UTC;
* a calendar date `2017-07-25` = 00:00:00 UTC that day;
* a year-month `2017-07` = 00:00:00 UTC on the first of that month;
* a year `2017`, as a *string of exactly four digits* (0001–9999) = 00:00:00 UTC on 1 January;
* an aware `datetime` (converted to UTC) and a `date` (00:00:00 UTC that day).

Refused, always with the accepted forms in the message: naive date-times (a time without a zone:
the service will not guess one), numbers and numeric strings other than a four-digit year —
`1500000000`, `"1500000000"`, `"20170725"` are *not* read as Unix epochs or basic-format dates,
so nothing is ever silently stored as 1970 — booleans, anything that is not a string, date or
datetime, and strings that are not one of the forms above. An instant whose conversion to UTC
leaves years 1–9999 (`0001-01-01T00:00:00+14:00`) is refused too.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

from palimpsest.schema.errors import BadInputError

ACCEPTED_FORMS = (
    "an ISO-8601 date-time with a timezone (2017-07-25T10:00:00Z, 2017-07-25T12:00:00+02:00), "
    "a date (2017-07-25), a year-month (2017-07) or a four-digit year (2017); "
    "dates without a time mean 00:00:00 UTC"
)

_MAX_TEXT = 64  # no accepted form is longer; anything longer is refused without parsing
# ASCII digits only: `\d` would also take other scripts' digits.
_YEAR = re.compile(r"([0-9]{4})")
_YEAR_MONTH = re.compile(r"([0-9]{4})-([0-9]{2})")
_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_DATETIME = re.compile(
    r"(?P<y>[0-9]{4})-(?P<mo>[0-9]{2})-(?P<d>[0-9]{2})[Tt ](?P<h>[0-9]{2}):(?P<mi>[0-9]{2})"
    r"(?::(?P<s>[0-9]{2})(?:[.,](?P<frac>[0-9]{1,9}))?)?"
    r"(?P<zone>[Zz]|[+-][0-9]{2}:?[0-9]{2})?"
)


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 50 else text[:47] + "..."


def _refuse(field: str, why: str) -> BadInputError:
    return BadInputError(f"{field} {why}; use {ACCEPTED_FORMS}", field=field)


def _to_utc(value: datetime, field: str, raw: object) -> datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise _refuse(field, f"needs a timezone (add Z or an offset such as +02:00), got {_shown(raw)}")
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise _refuse(field, f"is out of range once converted to UTC (years 0001-9999), got {_shown(raw)}") \
            from None


def _start_of(field: str, raw: str, year: int, month: int = 1, day: int = 1) -> datetime:
    try:
        return datetime(year, month, day, tzinfo=UTC)
    except ValueError:
        raise _refuse(field, f"is not a real calendar date (years 0001-9999), got {_shown(raw)}") from None


def _parse_text(text: str, field: str) -> datetime:
    raw = text
    text = text.strip()
    if len(text) > _MAX_TEXT:
        raise _refuse(field, f"is not a date or time, got {_shown(raw)}")
    if m := _YEAR.fullmatch(text):
        return _start_of(field, raw, int(m[1]))
    if m := _YEAR_MONTH.fullmatch(text):
        return _start_of(field, raw, int(m[1]), int(m[2]))
    if m := _DATE.fullmatch(text):
        return _start_of(field, raw, int(m[1]), int(m[2]), int(m[3]))
    if m := _DATETIME.fullmatch(text):
        if m["zone"] is None:
            raise _refuse(field, f"needs a timezone (add Z or an offset such as +02:00), got {_shown(raw)}")
        year, month, day = int(m["y"]), int(m["mo"]), int(m["d"])
        _start_of(field, raw, year, month, day)
        hour, minute, second = int(m["h"]), int(m["mi"]), int(m["s"] or 0)
        micro = int((m["frac"] or "0").ljust(6, "0")[:6])
        zone = m["zone"]
        if zone in {"Z", "z"}:
            tz = UTC
        else:
            digits = zone[1:].replace(":", "")
            off_h, off_m = int(digits[:2]), int(digits[2:])
            if off_h > 23 or off_m > 59:
                raise _refuse(field, f"has an impossible UTC offset, got {_shown(raw)}")
            delta = timedelta(hours=off_h, minutes=off_m)
            tz = timezone(-delta if zone[0] == "-" else delta)
        try:
            local = datetime(year, month, day, hour, minute, second, micro, tzinfo=tz)
        except ValueError:
            raise _refuse(field, f"has an impossible time of day, got {_shown(raw)}") from None
        return _to_utc(local, field, raw)
    if text.lstrip("+-").replace(".", "", 1).isdigit():
        raise _refuse(field, f"does not take numbers or Unix timestamps, got {_shown(raw)}")
    raise _refuse(field, f"is not a date or time, got {_shown(raw)}")


def parse_instant(value: Any, field: str) -> datetime | None:
    """`value` as an aware UTC datetime (None stays None), or a BadInputError naming `field`."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return _to_utc(value, field, value)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    if isinstance(value, str):
        return _parse_text(value, field)
    if isinstance(value, bool):
        raise _refuse(field, f"is not a date or time, got {_shown(value)}")
    if isinstance(value, int | float):
        raise _refuse(field, f"does not take numbers or Unix timestamps, got {_shown(value)}")
    raise _refuse(field, f"must be a date/time string, got {type(value).__name__}")
