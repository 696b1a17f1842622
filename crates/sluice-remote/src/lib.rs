//! Loads into database servers: sinks of sluice's load pipeline
//! ([`sluice::load::Sink`]) whose end is a table of a PostgreSQL server,
//! so that every front-end feature of a load (every core, inference,
//! exact types, rejects, encodings, compression, JSON, resume) works the
//! same with a server at the end.
//!
//! Useful for: `sluice load --into URL`: what a target URL is
//! ([`Target`]), the server's table checked or created, and the load's
//! exactly-once bookkeeping on the server ([`pg`]).
//! Not useful for: reading and parsing (`sluice::load`), or the binary
//! COPY encoding itself (`sluice::pgcopy`).

pub mod pg;

use std::path::Path;

use sluice::{Error, Result};

/// Where a load goes: a database server's table, by URL.
pub enum Target {
    /// `postgresql://user[:password]@host[:port]/db[?sslmode=...]`
    Postgres(pg::PgTarget),
}

impl Target {
    /// The target a URL names. The password comes from the URL, else from
    /// `password_file` (its first line), else from `PGPASSWORD`.
    pub fn parse(url: &str, password_file: Option<&Path>) -> Result<Target> {
        let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
        match scheme.as_deref() {
            Some("postgresql" | "postgres") => {
                pg::PgTarget::parse(url, password_file).map(Target::Postgres)
            }
            Some("mysql" | "mariadb") => Err(Error::Unsupported(
                "loads into MySQL and MariaDB servers (mysql://, mariadb://) are not built yet; \
                 load into PostgreSQL (postgresql://) or into a sluice table"
                    .into(),
            )),
            _ => Err(Error::Config(format!(
                "--into {}: expected a URL postgresql://user@host[:port]/database",
                redact(url)
            ))),
        }
    }
}

/// A URL with its password replaced by `***`, for messages.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (auth, host) = match rest.rsplit_once('@') {
        Some(x) => x,
        None => return url.to_string(),
    };
    match auth.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_string(),
    }
}

/// The first line of a password file, without its line end.
pub(crate) fn read_password_file(path: &Path) -> Result<String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::Config(format!(
            "--password-file {}: cannot read it: {e}",
            path.display()
        ))
    })?;
    Ok(text.lines().next().unwrap_or("").to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_hides_only_the_password() {
        assert_eq!(
            redact("postgresql://ann:secret@db:5432/x"),
            "postgresql://ann:***@db:5432/x"
        );
        assert_eq!(redact("postgresql://ann@db/x"), "postgresql://ann@db/x");
        assert_eq!(redact("not a url"), "not a url");
    }

    #[test]
    fn unknown_and_unbuilt_schemes_are_clear_errors() {
        let e = Target::parse("ftp://x/y", None).err().unwrap().to_string();
        assert!(e.contains("expected a URL postgresql://"), "{e}");
        let e = Target::parse("mariadb://u@h/db", None)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("not built yet"), "{e}");
    }
}
