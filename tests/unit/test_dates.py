"""schema.dates.parse_instant: every accepted form and its exact UTC instant; every refusal typed and named."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

import pytest
from pydantic import ValidationError

from palimpsest.schema.dates import parse_instant
from palimpsest.schema.errors import BadInputError
from palimpsest.schema.models import ClaimInput

ACCEPTED: list[tuple[Any, datetime]] = [
    ("2017", datetime(2017, 1, 1, tzinfo=UTC)),
    ("0001", datetime(1, 1, 1, tzinfo=UTC)),
    ("9999", datetime(9999, 1, 1, tzinfo=UTC)),
    (" 2014 ", datetime(2014, 1, 1, tzinfo=UTC)),
    ("2014-07", datetime(2014, 7, 1, tzinfo=UTC)),
    ("2014-01-01", datetime(2014, 1, 1, tzinfo=UTC)),
    ("2016-02-29", datetime(2016, 2, 29, tzinfo=UTC)),
    ("2017-07-25T10:00:00Z", datetime(2017, 7, 25, 10, tzinfo=UTC)),
    ("2017-07-25t10:00:00z", datetime(2017, 7, 25, 10, tzinfo=UTC)),
    ("2017-07-25 10:00Z", datetime(2017, 7, 25, 10, tzinfo=UTC)),
    ("2017-07-25T12:00:00+02:00", datetime(2017, 7, 25, 10, tzinfo=UTC)),
    ("2017-07-25T12:00:00+0200", datetime(2017, 7, 25, 10, tzinfo=UTC)),
    ("2017-07-25T00:30:00-05:30", datetime(2017, 7, 25, 6, tzinfo=UTC)),
    ("2017-07-25T10:00:00.123456Z", datetime(2017, 7, 25, 10, 0, 0, 123456, tzinfo=UTC)),
    ("2017-07-25T10:00:00.1234567Z", datetime(2017, 7, 25, 10, 0, 0, 123456, tzinfo=UTC)),
    ("2017-07-25T10:00:00,5Z", datetime(2017, 7, 25, 10, 0, 0, 500000, tzinfo=UTC)),
    ("2017-01-01T00:00:00+01:00", datetime(2016, 12, 31, 23, tzinfo=UTC)),
    ("0001-01-01T00:00:00-01:00", datetime(1, 1, 1, 1, tzinfo=UTC)),
    ("9999-12-31T23:59:59+01:00", datetime(9999, 12, 31, 22, 59, 59, tzinfo=UTC)),
    (datetime(2017, 7, 25, 12, tzinfo=timezone(timedelta(hours=2))), datetime(2017, 7, 25, 10, tzinfo=UTC)),
    (datetime(2017, 7, 25, 10, tzinfo=UTC), datetime(2017, 7, 25, 10, tzinfo=UTC)),
    (date(2014, 1, 1), datetime(2014, 1, 1, tzinfo=UTC)),
]


@pytest.mark.parametrize(("value", "expected"), ACCEPTED)
def test_accepted_forms_give_the_exact_utc_instant(value: Any, expected: datetime) -> None:
    got = parse_instant(value, "valid_from")
    assert got == expected
    assert got is not None and got.tzinfo is UTC and got.utcoffset() == timedelta(0)


def test_none_stays_none() -> None:
    assert parse_instant(None, "valid_at") is None


REFUSED: list[tuple[Any, str]] = [
    # numbers and numeric strings: never Unix seconds, never basic-format dates
    (1500000000, "Unix"),
    (1500000000.5, "Unix"),
    (0, "Unix"),
    (-1, "Unix"),
    (2017, "Unix"),  # a year must be a *string* of four digits
    ("1500000000", "Unix"),
    ("20170725", "Unix"),
    ("201707", "Unix"),
    ("17", "Unix"),
    ("-2017", "Unix"),
    ("+2017", "Unix"),
    ("2017.5", "Unix"),
    ("٢٠١٧", "Unix"),  # Arabic-Indic digits are not ASCII digits
    (True, "not a date"),
    (False, "not a date"),
    # naive: a time without a zone is not guessed
    ("2017-07-25T10:00:00", "timezone"),
    ("2017-07-25 10:00", "timezone"),
    (datetime(2017, 7, 25, 10), "timezone"),
    # out of range once in UTC, impossible calendar values
    ("0001-01-01T00:00:00+14:00", "out of range"),
    ("9999-12-31T23:59:59-14:00", "out of range"),
    (datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=14))), "out of range"),
    ("0000", "calendar"),
    ("2017-13", "calendar"),
    ("2017-00", "calendar"),
    ("2017-02-29", "calendar"),
    ("2017-07-32T00:00Z", "calendar"),
    ("2017-07-25T24:00:00Z", "time of day"),
    ("2017-07-25T23:59:60Z", "time of day"),
    ("2017-07-25T10:00+24:00", "offset"),
    ("2017-07-25T10:00+05:60", "offset"),
    # garbage
    ("", "not a date"),
    ("   ", "not a date"),
    ("yesterday", "not a date"),
    ("2017-7-25", "not a date"),
    ("2017-W30-2", "not a date"),
    ("20170725T100000Z", "not a date"),
    ("2017-07-25T10Z", "not a date"),
    ("2017-07-25T10:00:00 UTC", "not a date"),
    ("2017-07-25T10:00:00Z\n2018", "not a date"),
    ("\ud800", "not a date"),
    ("2017\ud800", "not a date"),
    ("\x00", "not a date"),
    ("2" * 10_000, "not a date"),
    ([2017], "string"),
    ({"epoch": 1500000000}, "string"),
    (b"2017", "string"),
]


@pytest.mark.parametrize(("value", "why"), REFUSED)
@pytest.mark.parametrize("field", ["valid_from", "validAt", "filter.validAt"])
def test_refused_forms_are_bad_input_naming_the_field(value: Any, why: str, field: str) -> None:
    with pytest.raises(BadInputError) as exc:
        parse_instant(value, field)
    err = exc.value
    assert err.code == "BAD_INPUT" and err.field == field
    assert err.message.startswith(field + " ") and why in err.message
    assert "2017-07-25T10:00:00Z" in err.message and "four-digit year" in err.message  # the accepted forms
    assert len(err.message) < 400  # the value is shown, shortened


def test_claim_input_never_lets_pydantic_read_numbers_as_epochs() -> None:
    """The validator runs in mode="before": pydantic's own coercion ("2017" → 1970-01-01T00:33:37Z) never runs."""
    ok = ClaimInput.model_validate({"content": "c", "source": "s", "valid_from": "2017", "valid_to": "2017-07"})
    assert ok.valid_from == datetime(2017, 1, 1, tzinfo=UTC) and ok.valid_to == datetime(2017, 7, 1, tzinfo=UTC)
    for bad in ("20170725", 1500000000, "1500000000", 1.0, True):
        with pytest.raises(ValidationError) as exc:
            ClaimInput.model_validate({"content": "c", "source": "s", "valid_to": bad})
        cause = exc.value.errors()[0]
        assert cause["loc"] == ("valid_to",)
        assert isinstance(cause["ctx"]["error"], BadInputError) and cause["ctx"]["error"].field == "valid_to"
