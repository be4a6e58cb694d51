//! Set-up queries race the stop.
//!
//! Before the first unit, the tool's own queries (the server's version,
//! the tables' checks and creation, the load state) can wait on the
//! server without limit: a lock another session holds is enough. A stop
//! (Ctrl-C) must not wait with them, nor leave them queued behind the
//! lock: the query is cancelled on the server and the step ends as
//! interrupted. The workers' units have their own ending (see `ending`).

use std::future::Future;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use tokio_postgres::{CancelToken, Client};

use super::ending::ending;
use crate::db::connect;
use crate::db::endpoint::Endpoint;
use crate::db::tls::Tls;
use crate::error::{Error, Result};

/// The longest a stop during set-up waits for the server to take the
/// cancel of the set-up query.
const SETUP_CANCEL_WAIT: Duration = Duration::from_secs(2);

/// What an interrupt during set-up says it interrupted.
pub const SETUP: &str = "during set-up";

/// Runs `query` unless `stop` is set first. On a stop the statement is
/// cancelled on the server (`cancel`: the connection it runs on, if any)
/// and the result is an interrupt [`SETUP`].
pub async fn or_stop<T>(
    stop: &AtomicBool,
    cancel: Option<(&Endpoint, &Tls, CancelToken)>,
    query: impl Future<Output = Result<T>>,
) -> Result<T> {
    tokio::select! {
        r = query => r,
        _ = ending(stop, None) => {
            if let Some((endpoint, tls, token)) = cancel {
                let limit = connect::connect_timeout(&endpoint.config).min(SETUP_CANCEL_WAIT);
                let _ = crate::db::cancel::cancel(&endpoint.config, tls, &token, limit).await;
            }
            Err(Error::Interrupted(SETUP))
        }
    }
}

/// The tool's own connection during set-up, with what a stop needs to
/// cancel the query running on it.
pub struct SetUpConn<'a> {
    pub client: &'a Client,
    /// What `client` connected to: where the cancel goes.
    pub endpoint: &'a Endpoint,
    pub tls: &'a Tls,
    pub stop: &'a AtomicBool,
}

impl SetUpConn<'_> {
    /// Runs `query` on this connection unless the run is stopped first
    /// (see [`or_stop`]).
    pub async fn or_stop<T>(&self, query: impl Future<Output = Result<T>>) -> Result<T> {
        let cancel = Some((self.endpoint, self.tls, self.client.cancel_token()));
        or_stop(self.stop, cancel, query).await
    }
}
