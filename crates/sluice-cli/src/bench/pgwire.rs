//! A minimal PostgreSQL-protocol client for the scenarios that drive
//! `sluice serve` without pgbench: startup (trust), simple queries, and
//! prepared statements run with text parameters. It counts rows; it does
//! not decode them.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use anyhow::{Context, Result, bail};

/// Rows of text values (`None`: NULL).
pub type TextRows = Vec<Vec<Option<String>>>;

/// A query's rows, or its error's SQLSTATE and message.
pub type Answer = std::result::Result<TextRows, (String, String)>;

/// A DataRow's values as text.
fn data_row(b: &[u8]) -> Option<Vec<Option<String>>> {
    let n = u16::from_be_bytes([*b.first()?, *b.get(1)?]) as usize;
    let mut at = 2;
    let mut row = Vec::with_capacity(n);
    for _ in 0..n {
        let len = i32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?);
        at += 4;
        if len < 0 {
            row.push(None);
        } else {
            let v = b.get(at..at + len as usize)?;
            row.push(Some(String::from_utf8_lossy(v).into_owned()));
            at += len as usize;
        }
    }
    Some(row)
}

/// An ErrorResponse's SQLSTATE (field `C`) and the rest of its fields.
fn error_fields(b: &[u8]) -> (String, String) {
    let mut code = String::new();
    let mut text = Vec::new();
    for f in b.split(|&c| c == 0).filter(|f| !f.is_empty()) {
        let v = String::from_utf8_lossy(&f[1..]).into_owned();
        match f[0] {
            b'C' => code = v,
            _ => text.push(v),
        }
    }
    (code, text.join(" "))
}

pub struct Client {
    s: TcpStream,
    out: Vec<u8>,
}

fn message(out: &mut Vec<u8>, t: u8, body: &[u8]) {
    out.push(t);
    out.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
    out.extend_from_slice(body);
}

impl Client {
    /// Connects and completes the startup as `user`.
    pub fn connect(port: u16, user: &str) -> Result<Client> {
        let s = TcpStream::connect(("127.0.0.1", port))
            .with_context(|| format!("connecting to 127.0.0.1:{port}"))?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(Duration::from_secs(60)))?;
        let mut c = Client { s, out: Vec::new() };
        let mut body = 196_608u32.to_be_bytes().to_vec();
        body.extend_from_slice(format!("user\0{user}\0\0").as_bytes());
        let mut m = ((body.len() + 4) as u32).to_be_bytes().to_vec();
        m.extend_from_slice(&body);
        c.s.write_all(&m)?;
        c.until_ready()?;
        Ok(c)
    }

    /// Reads messages up to ReadyForQuery; the DataRows counted. An
    /// ErrorResponse is an error (after the ReadyForQuery).
    fn until_ready(&mut self) -> Result<usize> {
        match self.answer(false)? {
            Ok((rows, _)) => Ok(rows),
            Err((_, e)) => bail!("the server answered an error: {e}"),
        }
    }

    /// How long a read waits for the server (60 s unless set).
    pub fn read_timeout(&mut self, t: Duration) -> Result<()> {
        Ok(self.s.set_read_timeout(Some(t))?)
    }

    /// Runs a simple-protocol query: its rows as text (`None`: NULL), or
    /// the error's SQLSTATE and message.
    pub fn rows(&mut self, sql: &str) -> Result<Answer> {
        self.out.clear();
        message(&mut self.out, b'Q', format!("{sql}\0").as_bytes());
        self.s.write_all(&self.out)?;
        Ok(self.answer(true)?.map(|(_, rows)| rows))
    }

    /// Messages up to ReadyForQuery: the rows (counted; kept as text when
    /// `keep`), or an ErrorResponse's SQLSTATE and message.
    #[allow(clippy::type_complexity)]
    fn answer(&mut self, keep: bool) -> Result<Result<(usize, TextRows), (String, String)>> {
        let mut rows = 0;
        let mut kept = Vec::new();
        let mut error = None;
        loop {
            let mut head = [0u8; 5];
            self.s
                .read_exact(&mut head)
                .context("reading from the server")?;
            let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
            let mut body = vec![0u8; len.saturating_sub(4)];
            self.s.read_exact(&mut body)?;
            match head[0] {
                b'D' => {
                    rows += 1;
                    if keep {
                        kept.push(data_row(&body).context("a DataRow the client cannot read")?);
                    }
                }
                b'E' => error = Some(error_fields(&body)),
                b'Z' => break,
                _ => {}
            }
        }
        Ok(match error {
            Some(e) => Err(e),
            None => Ok((rows, kept)),
        })
    }

    /// Runs a simple-protocol query; the number of rows.
    pub fn simple(&mut self, sql: &str) -> Result<usize> {
        self.out.clear();
        message(&mut self.out, b'Q', format!("{sql}\0").as_bytes());
        self.s.write_all(&self.out)?;
        self.until_ready()
    }

    /// Prepares `sql` as statement `name`.
    pub fn prepare(&mut self, name: &str, sql: &str) -> Result<()> {
        self.out.clear();
        let mut body = format!("{name}\0{sql}\0").into_bytes();
        body.extend_from_slice(&0u16.to_be_bytes());
        message(&mut self.out, b'P', &body);
        message(&mut self.out, b'S', &[]);
        self.s.write_all(&self.out)?;
        self.until_ready().map(|_| ())
    }

    /// Binds text parameters to statement `name`, runs it (results in
    /// binary when `binary`); the number of rows.
    pub fn execute(&mut self, name: &str, params: &[&str], binary: bool) -> Result<usize> {
        self.out.clear();
        let mut b = format!("\0{name}\0").into_bytes();
        b.extend_from_slice(&0u16.to_be_bytes());
        b.extend_from_slice(&(params.len() as u16).to_be_bytes());
        for p in params {
            b.extend_from_slice(&(p.len() as u32).to_be_bytes());
            b.extend_from_slice(p.as_bytes());
        }
        b.extend_from_slice(&1u16.to_be_bytes());
        b.extend_from_slice(&u16::from(binary).to_be_bytes());
        message(&mut self.out, b'B', &b);
        message(&mut self.out, b'E', b"\0\0\0\0\0");
        message(&mut self.out, b'S', &[]);
        self.s.write_all(&self.out)?;
        self.until_ready()
    }
}
