//! A minimal PostgreSQL-protocol client for the scenarios that drive
//! `sluice serve` without pgbench: startup (trust), simple queries, and
//! prepared statements run with text parameters. It counts rows; it does
//! not decode them.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use anyhow::{Context, Result, bail};

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
        let mut rows = 0;
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
                b'D' => rows += 1,
                b'E' => error = Some(String::from_utf8_lossy(&body).replace('\0', " ")),
                b'Z' => break,
                _ => {}
            }
        }
        match error {
            Some(e) => bail!("the server answered an error: {}", e.trim()),
            None => Ok(rows),
        }
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
