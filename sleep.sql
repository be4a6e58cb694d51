select pg_sleep(0.05);
