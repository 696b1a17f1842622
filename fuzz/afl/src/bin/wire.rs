//! The wire protocol, as any client may send it: after a good startup
//! message, the input's bytes go to a live `sluice serve` (in this
//! process) on a connection of their own, which is then closed from the
//! client's end. The server must answer or refuse them, never panic, and
//! must then still answer a query on a second connection; a server that
//! stops serving aborts the target (a crash for AFL++).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use sluice_server::{Background, Options};

/// A frontend message: type byte, length, body.
fn message(t: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![t];
    m.extend_from_slice(&((4 + body.len()) as i32).to_be_bytes());
    m.extend_from_slice(body);
    m
}

/// A v3 startup packet for user `fuzz`.
fn startup() -> Vec<u8> {
    let body = b"user\0fuzz\0\0";
    let mut p = Vec::new();
    p.extend_from_slice(&((8 + body.len()) as i32).to_be_bytes());
    p.extend_from_slice(&196_608i32.to_be_bytes());
    p.extend_from_slice(body);
    p
}

/// Sends `bytes` after the startup, closes the sending side, and reads
/// what comes back until the server closes or `wait` passes in silence.
fn exchange(addr: SocketAddr, bytes: &[u8], wait: Duration) -> Vec<u8> {
    let Ok(mut s) = TcpStream::connect(addr) else {
        return Vec::new();
    };
    let _ = s.set_read_timeout(Some(wait));
    let _ = s.write_all(&[startup(), bytes.to_vec()].concat());
    let _ = s.shutdown(std::net::Shutdown::Write);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out
}

fn main() {
    let dir = sluice_fuzz::Scratch::new("wire");
    let db = sluice_fuzz::sample_db(&dir.0);
    // Started in the fork server's child, on the first input: threads do
    // not survive a fork.
    let mut server: Option<Background> = None;
    let check = message(b'Q', b"SELECT count(*) FROM t\0");
    sluice_fuzz::fuzz(|data| {
        let srv = server.get_or_insert_with(|| {
            let mut o = Options::new(&db, "127.0.0.1:0".parse().expect("an address"));
            o.threads = Some(1);
            o.statement_timeout = Some(Duration::from_secs(1));
            Background::start(o).expect("the server")
        });
        if data.len() > 1 << 16 {
            return;
        }
        exchange(srv.addr, data, Duration::from_secs(2));
        // A second client is still served: its count of the table's 5 rows
        // comes back.
        let out = exchange(srv.addr, &check, Duration::from_secs(5));
        let row = message(b'D', b"\0\x01\0\0\0\x015");
        assert!(
            out.windows(row.len()).any(|w| w == row.as_slice()),
            "the server stopped serving: {out:?}"
        );
    });
}
