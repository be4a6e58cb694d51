-- YCSB workload A as a pgbench script: half reads of a whole record, half
-- updates of one field, on the usertable of `-o ycsb-load` (10 fields).
--
-- Keys are drawn as YCSB draws them: a zipfian rank over 10^10 items with
-- YCSB's constant 0.99 (which pgbench's own random_zipfian refuses: it
-- takes 1.001 to 1000), hashed into the records with FNV-1a, and the key
-- is "user" followed by the FNV-1a hash of the record number, as in
-- `-o ycsb-load`. Give the record count with -D records=N.
--
--   ysql-bench -u ... -o ycsb-load -r 100000 -t 4
--   ysql-bench -u ... --script examples/ycsb-a.sql -D records=100000 -t 32 --time 5m
--
-- `-o ycsb-a` does the same natively; this script is the starting point for
-- a mix of your own (other shares, other statements).
\set rank random_zipfian(0, 9999999999, 0.99)
\set record abs(hash_fnv1a(:rank, 0)) % :records
\set key abs(hash_fnv1a(:record, 0))
\if random(1, 100) <= 50
SELECT ycsb_key, field0, field1, field2, field3, field4, field5, field6, field7, field8, field9
    FROM usertable WHERE ycsb_key = 'user' || :key;
\else
\set field random(0, 9)
\if :field = 0
UPDATE usertable SET field0 = substr(repeat(md5(random()::text), 4), 1, 100) WHERE ycsb_key = 'user' || :key;
\elif :field = 1
UPDATE usertable SET field1 = substr(repeat(md5(random()::text), 4), 1, 100) WHERE ycsb_key = 'user' || :key;
\elif :field = 2
UPDATE usertable SET field2 = substr(repeat(md5(random()::text), 4), 1, 100) WHERE ycsb_key = 'user' || :key;
\elif :field = 3
UPDATE usertable SET field3 = substr(repeat(md5(random()::text), 4), 1, 100) WHERE ycsb_key = 'user' || :key;
\elif :field = 4
UPDATE usertable SET field4 = substr(repeat(md5(random()::text), 4), 1, 100) WHERE ycsb_key = 'user' || :key;
\elif :field = 5
UPDATE usertable SET field5 = substr(repeat(md5(random()::text), 4), 1, 100) WHERE ycsb_key = 'user' || :key;
\elif :field = 6
UPDATE usertable SET field6 = substr(repeat(md5(random()::text), 4), 1, 100) WHERE ycsb_key = 'user' || :key;
\elif :field = 7
UPDATE usertable SET field7 = substr(repeat(md5(random()::text), 4), 1, 100) WHERE ycsb_key = 'user' || :key;
\elif :field = 8
UPDATE usertable SET field8 = substr(repeat(md5(random()::text), 4), 1, 100) WHERE ycsb_key = 'user' || :key;
\else
UPDATE usertable SET field9 = substr(repeat(md5(random()::text), 4), 1, 100) WHERE ycsb_key = 'user' || :key;
\endif
\endif
