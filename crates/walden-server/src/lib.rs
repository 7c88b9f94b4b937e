//! Walden's server: the PostgreSQL wire protocol over the SQL layer
//! (`walden serve`), and a Prometheus `/metrics` endpoint.
//!
//! ```no_run
//! use walden_server::{Server, ServerConfig};
//! let server = Server::start(ServerConfig::new("/tmp/walden-data")).unwrap();
//! println!("listening on {}", server.local_addr());
//! server.run(true).unwrap(); // until SIGTERM or SIGINT
//! ```

pub mod auth;
pub mod config;
mod conn;
pub mod copybin;
mod frontend;
mod handshake;
pub mod hba;
pub mod metrics;
pub mod pgarray;
mod pgrecord;
pub mod pgtypes;
mod server;
pub mod sqlstate;

pub use config::{AuthMethod, ConfigFile, Rules, ServerConfig};
#[doc(hidden)]
pub use conn::decode_frontend_for_fuzz;
pub use server::{Server, ServerError, Shared, ShutdownHandle};
