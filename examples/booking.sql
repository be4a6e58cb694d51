-- One flight booking as a pgbench script: what `-o booking` does (after
-- OnGres' PostgreSQL-vs-MongoDB booking benchmark), written in pgbench's
-- script language, so it can be changed without touching the tool.
--
-- A seat on a flight and day, its payment, and the flight's audit counter,
-- in one transaction at repeatable read. The tables are those of
-- `-o booking-load`; `-o booking-check` checks them afterwards (seats equal
-- the audit counters, one payment per seat).
--
--   ysql-bench -u ... -o booking-load -t 4
--   ysql-bench -u ... --script examples/booking.sql -t 32 --time 5m --max-tries 0 -P 10
--   ysql-bench -u ... -o booking-check
--
-- --max-tries 0 retries a serialization failure until the booking goes
-- through, as the original benchmark does (pgbench and ysql-bench try once
-- by default). A user id is drawn from 9e18, so two bookings of one user
-- on one flight and day (a duplicate seat) are practically impossible
-- without a counter shared between clients.
\set flight random(1, 15000)
\set day random(0, 29)
\set user random(1, 9000000000000000000)
\set cents random(4900, 99900)
BEGIN ISOLATION LEVEL REPEATABLE READ;
INSERT INTO seat (user_id, schedule_id, day)
    VALUES (:user, :flight, date '2027-01-01' + :day::int);
INSERT INTO payment (user_id, schedule_id, day, amount)
    VALUES (:user, :flight, date '2027-01-01' + :day::int, :cents / 100.0);
INSERT INTO audit (schedule_id, day, seats_occupied)
    VALUES (:flight, date '2027-01-01' + :day::int, 1)
    ON CONFLICT (schedule_id, day) DO UPDATE SET seats_occupied = audit.seats_occupied + 1;
COMMIT;
