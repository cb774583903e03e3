-- Bookings of team mode: a person holds a lane, or a whole device, for a window of time.
--
-- lane is the booked lane's id, or '' for a whole-device booking; device is the device the
-- booking holds (for a lane booking, the device the lane is on), so that a whole-device booking
-- and a lane booking on the same device are seen to overlap. model is the model to load on the
-- lane at the start ('' for none). start_at < end_at, in the schema's time text (UTC, nine
-- fractional digits), so text comparison is time comparison and the overlap check is
-- start_at < other.end_at AND other.start_at < end_at.
--
-- state is pending (waits for an admin), approved, rejected, cancelled (before it started) or
-- ended (on time, or cut short: end_at is then when it was cancelled). pending and approved
-- bookings hold their window; pending, approved and ended count against a person's hours per
-- week. decided_by/decided_at say who approved or rejected it and when ('' until then).
CREATE TABLE bookings (
    id          TEXT NOT NULL PRIMARY KEY,
    person_id   TEXT NOT NULL,
    person_name TEXT NOT NULL,
    lane        TEXT NOT NULL DEFAULT '',
    device      TEXT NOT NULL DEFAULT '',
    model       TEXT NOT NULL DEFAULT '',
    start_at    TEXT NOT NULL,
    end_at      TEXT NOT NULL,
    state       TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'rejected', 'cancelled', 'ended')),
    decided_by  TEXT NOT NULL DEFAULT '',
    decided_at  TEXT NOT NULL DEFAULT '',
    created_at  TEXT NOT NULL,
    CHECK (start_at < end_at)
) STRICT;

CREATE INDEX bookings_device_window ON bookings (device, end_at);
CREATE INDEX bookings_person_window ON bookings (person_id, end_at);
CREATE INDEX bookings_state_window ON bookings (state, start_at);
