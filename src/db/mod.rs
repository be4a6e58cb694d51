//! Everything that talks to the server about something other than the
//! workload: where to connect and the pool ([`connect`]), the connection
//! string's keys and host list ([`conninfo`]), one place to connect to
//! with its hosts' passwords and failover ([`endpoint`]), the SQL that
//! differs between YugabyteDB and PostgreSQL ([`dialect`]), the benchmark
//! table's life cycle ([`schema`]) and the throwaway local server
//! ([`sandbox`]) that `--sandbox` and the tests use; several hosts and how
//! connections spread over them ([`nodes`]), YugabyteDB's zones and
//! node types and which of them a connection may go to ([`topology`]); TLS ([`tls`]); the password
//! file ([`passfile`]); cancelling a statement in flight ([`cancel`]); the
//! lean driver of select and update ([`wire`]); the server's own
//! statistics of a run
//! ([`server_stats`] the SQL, [`server_watch`] when it is read); the
//! tool's own statements, sent so that a pooler in transaction mode keeps
//! nothing of them ([`unnamed`]).

pub mod cancel;
pub mod connect;
pub mod conninfo;
pub mod dialect;
pub mod endpoint;
pub mod nodes;
pub mod passfile;
pub mod sandbox;
pub mod schema;
pub mod server_stats;
pub mod server_watch;
pub mod sql;
pub mod tls;
pub mod topology;
pub mod unnamed;
pub mod wire;
