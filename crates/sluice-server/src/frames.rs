//! Each connection's message loop, with the frontend messages checked as
//! their bytes arrive, before the protocol library decodes them.
//!
//! For: what the library's decoding loses. It reads a Bind parameter of
//! any negative length as NULL; PostgreSQL reads only -1 as NULL and
//! refuses any other negative length ("insufficient data left in
//! message", 08P01), and so does sluice: [`Checked`] wraps the socket,
//! follows the message framing in the bytes it passes on, and keeps a
//! verdict on each Bind message, which [`serve`] reads when the library
//! hands it the decoded message. Not for: the messages themselves (the
//! library decodes them; the handlers answer them).
//!
//! [`serve`] is the library's own loop (`process_socket`) with that one
//! step added: TLS negotiation, the startup timeout, a Terminate closing
//! the connection, an error answered and, for the extended protocol,
//! the messages up to the next Sync skipped.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::StreamExt;
use pgwire::api::{ClientInfo, ErrorHandler, PgWireConnectionState, PgWireServerHandlers};
use pgwire::error::{ErrorInfo, PgWireError};
use pgwire::messages::PgWireFrontendMessage;
use pgwire::tokio::server::{negotiate_tls, process_error, process_message};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_util::codec::{Framed, FramedParts};

/// How long a client has to finish its startup (the library's figure).
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// The codes of the untyped requests a client may send before its
/// startup message, each followed by another untyped message.
const SSL_REQUEST: u32 = 80_877_103;
const GSSENC_REQUEST: u32 = 80_877_104;

/// Each Bind message read so far and not yet handled, in order.
type Verdicts = Arc<Mutex<VecDeque<BindSeen>>>;

/// A Bind message as its bytes say, framed by its declared length.
#[derive(Debug, Default)]
struct BindSeen {
    /// Portal and statement names as the library decodes them (empty:
    /// `None`).
    names: [Option<String>; 2],
    formats: Vec<i16>,
    /// Each parameter's declared length.
    lengths: Vec<i32>,
    results: Vec<i16>,
    /// What is wrong with it, as PostgreSQL reads it.
    fault: Option<String>,
}

impl BindSeen {
    /// Whether `b` is this message as the library decoded it. The
    /// library decodes from the stream, not from a message cut at its
    /// declared length: a message whose length lies (too short, too
    /// long) makes it read other bytes than these, and so no Bind it
    /// hands over matches.
    fn is(&self, b: &pgwire::messages::extendedquery::Bind) -> bool {
        self.names[0] == b.portal_name
            && self.names[1] == b.statement_name
            && self.formats == b.parameter_format_codes
            && self.results == b.result_column_format_codes
            && self.lengths.len() == b.parameters.len()
            && self
                .lengths
                .iter()
                .zip(&b.parameters)
                .all(|(&l, p)| match p {
                    Some(v) => l >= 0 && v.len() == l as usize,
                    None => l < 0,
                })
    }
}

/// Follows the framing of the frontend messages in a stream of bytes.
#[derive(Default)]
struct Scan {
    /// Past the startup message: every message is typed (one type byte,
    /// then its length).
    typed: bool,
    /// The header of the message being read, while incomplete.
    head: Vec<u8>,
    /// Bytes of the current message's body still to come.
    left: usize,
    /// The body of the Bind message being read.
    bind: Option<Vec<u8>>,
}

impl Scan {
    /// Takes in the next bytes of the stream; each Bind message completed
    /// adds its verdict to `verdicts`.
    fn feed(&mut self, mut b: &[u8], verdicts: &Verdicts) {
        while !b.is_empty() {
            if self.left > 0 {
                let n = self.left.min(b.len());
                if let Some(body) = &mut self.bind {
                    body.extend_from_slice(&b[..n]);
                }
                self.left -= n;
                b = &b[n..];
                if self.left == 0 {
                    self.end(verdicts);
                }
                continue;
            }
            let need = if self.typed { 5 } else { 8 };
            let n = (need - self.head.len()).min(b.len());
            self.head.extend_from_slice(&b[..n]);
            b = &b[n..];
            if self.head.len() < need {
                continue;
            }
            let h = std::mem::take(&mut self.head);
            if self.typed {
                let len = u32::from_be_bytes([h[1], h[2], h[3], h[4]]) as usize;
                // A length under 4 is refused by the library (the
                // connection closes): no body follows.
                self.left = len.saturating_sub(4);
                if h[0] == b'B' {
                    self.bind = Some(Vec::with_capacity(self.left.min(1 << 16)));
                }
            } else {
                let len = u32::from_be_bytes([h[0], h[1], h[2], h[3]]) as usize;
                let code = u32::from_be_bytes([h[4], h[5], h[6], h[7]]);
                self.left = len.saturating_sub(8);
                // The startup message (or a cancel request) ends the
                // untyped messages; an SSL or GSS request does not.
                self.typed = code != SSL_REQUEST && code != GSSENC_REQUEST;
            }
            if self.left == 0 {
                self.end(verdicts);
            }
        }
    }

    /// The current message is complete.
    fn end(&mut self, verdicts: &Verdicts) {
        if let Some(body) = self.bind.take()
            && let Ok(mut v) = verdicts.lock()
        {
            // Binds the library never hands over (it read them as part
            // of a message whose length lied) are dropped at the next it
            // does; a client that sends only such keeps at most this many.
            if v.len() >= 4096 {
                v.pop_front();
            }
            v.push_back(read_bind(&body));
        }
    }
}

/// The body of a Bind message as PostgreSQL reads it: a parameter length
/// below -1 or one past the message's end is a fault ("insufficient data
/// left in message"), and so are bytes left after the last field
/// ("invalid message format").
fn read_bind(body: &[u8]) -> BindSeen {
    const SHORT: &str = "insufficient data left in message";
    let mut seen = BindSeen::default();
    let mut at = 0usize;
    let fault = |seen: &mut BindSeen, m: String| {
        seen.fault.get_or_insert(m);
    };
    // Portal and statement names.
    for k in 0..2 {
        match body.get(at..).and_then(|b| b.iter().position(|&c| c == 0)) {
            Some(e) => {
                if e > 0 {
                    seen.names[k] = Some(String::from_utf8_lossy(&body[at..at + e]).into_owned());
                }
                at += e + 1;
            }
            None => {
                fault(&mut seen, SHORT.into());
                return seen;
            }
        }
    }
    let u16_at = |at: usize| -> Option<usize> {
        Some(u16::from_be_bytes([*body.get(at)?, *body.get(at + 1)?]) as usize)
    };
    let i16s = |at: usize, n: usize| -> Option<Vec<i16>> {
        (0..n)
            .map(|i| {
                let p = at + 2 * i;
                Some(i16::from_be_bytes([*body.get(p)?, *body.get(p + 1)?]))
            })
            .collect()
    };
    let Some(n) = u16_at(at) else {
        fault(&mut seen, SHORT.into());
        return seen;
    };
    at += 2;
    let Some(f) = i16s(at, n) else {
        fault(&mut seen, SHORT.into());
        return seen;
    };
    seen.formats = f;
    at += 2 * n;
    let Some(params) = u16_at(at) else {
        fault(&mut seen, SHORT.into());
        return seen;
    };
    at += 2;
    for p in 1..=params {
        let Some(len) = body
            .get(at..at + 4)
            .map(|l| i32::from_be_bytes([l[0], l[1], l[2], l[3]]))
        else {
            fault(&mut seen, SHORT.into());
            return seen;
        };
        at += 4;
        seen.lengths.push(len);
        if len == -1 {
            continue;
        }
        if len < 0 {
            fault(
                &mut seen,
                format!(
                    "{SHORT}: parameter {p} has length {len} (-1 is NULL; no other length is below 0)"
                ),
            );
            continue;
        }
        if body.len() - at < len as usize {
            fault(&mut seen, SHORT.into());
            return seen;
        }
        at += len as usize;
    }
    let Some(n) = u16_at(at) else {
        fault(&mut seen, SHORT.into());
        return seen;
    };
    at += 2;
    let Some(r) = i16s(at, n) else {
        fault(&mut seen, SHORT.into());
        return seen;
    };
    seen.results = r;
    at += 2 * n;
    if at != body.len() {
        fault(&mut seen, "invalid message format".into());
    }
    seen
}

/// A socket whose incoming bytes pass through a [`Scan`].
pub(crate) struct Checked<S> {
    inner: S,
    scan: Scan,
    verdicts: Verdicts,
}

impl<S: AsyncRead + Unpin> AsyncRead for Checked<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        let before = buf.filled().len();
        let r = Pin::new(&mut me.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = r {
            me.scan.feed(&buf.filled()[before..], &me.verdicts);
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Checked<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// Serves one client connection: the library's message loop, with each
/// Bind message checked first (see the module's documentation).
pub async fn serve<H: PgWireServerHandlers>(
    sock: TcpStream,
    tls: Option<pgwire::tokio::TlsAcceptor>,
    handlers: H,
) -> io::Result<()> {
    let startup = tokio::time::sleep(STARTUP_TIMEOUT);
    tokio::pin!(startup);
    let socket = tokio::select! {
        _ = &mut startup => return Ok(()),
        s = negotiate_tls(sock, tls) => s?,
    };
    let Some(socket) = socket else {
        return Ok(());
    };
    // The same socket, its bytes read through a scan; what was already
    // read (after an SSL request, the startup message may be) is scanned
    // first.
    let old = socket.into_parts();
    let verdicts = Verdicts::default();
    let mut scan = Scan::default();
    scan.feed(&old.read_buf, &verdicts);
    let mut parts = FramedParts::new(
        Checked {
            inner: old.io,
            scan,
            verdicts: verdicts.clone(),
        },
        old.codec,
    );
    parts.read_buf = old.read_buf;
    parts.write_buf = old.write_buf;
    let mut socket = Framed::from_parts(parts);

    let startup_handler = handlers.startup_handler();
    let simple = handlers.simple_query_handler();
    let extended = handlers.extended_query_handler();
    let copy = handlers.copy_handler();
    let cancel = handlers.cancel_handler();
    let errors = handlers.error_handler();
    loop {
        let msg = if matches!(
            socket.state(),
            PgWireConnectionState::AwaitingStartup
                | PgWireConnectionState::AuthenticationInProgress
        ) {
            tokio::select! {
                _ = &mut startup => None,
                m = socket.next() => m,
            }
        } else {
            socket.next().await
        };
        let Some(Ok(msg)) = msg else { break };
        if matches!(msg, PgWireFrontendMessage::Terminate(_)) {
            break;
        }
        let extended_query = match socket.state() {
            PgWireConnectionState::CopyInProgress(e) => e,
            _ => msg.is_extended_query(),
        };
        let is_cancel = matches!(msg, PgWireFrontendMessage::CancelRequest(_));
        // A Bind the scan found malformed: refused, as PostgreSQL refuses
        // it, and skipped with what follows up to the next Sync. One the
        // scan did not see as a message of its own (the library read it
        // out of another message, or across the end of one, whose length
        // lied): refused too, as PostgreSQL refuses the message around it.
        // While the messages up to a Sync are skipped, nothing is said.
        let fault = match &msg {
            PgWireFrontendMessage::Bind(b) => {
                let seen = verdicts.lock().ok().and_then(|mut v| {
                    let i = v.iter().position(|s| s.is(b))?;
                    v.drain(..=i).next_back()
                });
                match seen {
                    Some(s) => s.fault,
                    None => Some("invalid message format".into()),
                }
            }
            _ => None,
        }
        .filter(|_| !matches!(socket.state(), PgWireConnectionState::AwaitingSync));
        let result = match fault {
            Some(m) => Err(PgWireError::UserError(Box::new(ErrorInfo::new(
                "ERROR".into(),
                "08P01".into(),
                m,
            )))),
            None => {
                process_message(
                    msg,
                    &mut socket,
                    startup_handler.clone(),
                    simple.clone(),
                    extended.clone(),
                    copy.clone(),
                    cancel.clone(),
                )
                .await
            }
        };
        if let Err(mut e) = result {
            errors.on_error(&socket, &mut e);
            let fatal = e.is_fatal();
            process_error(&mut socket, e, extended_query).await?;
            if fatal {
                break;
            }
        }
        if is_cancel {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Bind message's body: names, no formats, the given parameter
    /// lengths (each followed by that many bytes when not negative), no
    /// result formats.
    fn bind_body(lens: &[i32]) -> Vec<u8> {
        let mut b = b"\0s1\0".to_vec();
        b.extend(0u16.to_be_bytes());
        b.extend((lens.len() as u16).to_be_bytes());
        for &l in lens {
            b.extend(l.to_be_bytes());
            if l > 0 {
                b.extend(std::iter::repeat_n(b'7', l as usize));
            }
        }
        b.extend(0u16.to_be_bytes());
        b
    }

    fn message(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![kind];
        m.extend(((body.len() + 4) as u32).to_be_bytes());
        m.extend(body);
        m
    }

    #[test]
    fn bind_lengths_below_minus_one_or_past_the_end_are_faults() {
        let fault = |b: &[u8]| read_bind(b).fault;
        let ok = read_bind(&bind_body(&[1, -1, 0, 3]));
        assert_eq!(ok.fault, None);
        assert_eq!(ok.lengths, vec![1, -1, 0, 3]);
        assert_eq!(ok.names, [None, Some("s1".to_string())]);
        let f = fault(&bind_body(&[1, -2])).unwrap();
        assert!(f.contains("parameter 2 has length -2"), "{f}");
        assert!(fault(&bind_body(&[i32::MIN])).is_some());
        // A length past the end of the message.
        let mut b = bind_body(&[4]);
        b.truncate(b.len() - 4);
        assert!(fault(&b).is_some());
        // No result formats; bytes after them.
        let b = bind_body(&[1]);
        assert!(fault(&b[..b.len() - 2]).is_some());
        let f = fault(&[b.as_slice(), b"x"].concat()).unwrap();
        assert_eq!(f, "invalid message format");
        assert!(fault(b"\0s1").is_some());
        assert!(fault(b"").is_some());
    }

    #[test]
    fn the_scan_follows_messages_split_anywhere() {
        // An SSL request, the startup message, a Parse, two Binds (the
        // second malformed), a Sync: fed in every split of one or two
        // cuts, the verdicts are the same.
        let mut stream = Vec::new();
        stream.extend(8u32.to_be_bytes());
        stream.extend(SSL_REQUEST.to_be_bytes());
        let startup = b"\0\x03\0\0user\0u\0\0";
        stream.extend(((startup.len() + 4) as u32).to_be_bytes());
        stream.extend(startup);
        stream.extend(message(b'P', b"s1\0SELECT $1\0\0\0"));
        stream.extend(message(b'B', &bind_body(&[2, -1])));
        stream.extend(message(b'B', &bind_body(&[-5])));
        stream.extend(message(b'S', b""));
        let check = |pieces: &[&[u8]]| {
            let v = Verdicts::default();
            let mut s = Scan::default();
            for p in pieces {
                s.feed(p, &v);
            }
            let got: Vec<BindSeen> = v.lock().unwrap().drain(..).collect();
            assert_eq!(got.len(), 2);
            assert_eq!(got[0].fault, None);
            assert_eq!(got[0].lengths, vec![2, -1]);
            let f = got[1].fault.as_deref().unwrap();
            assert!(f.contains("parameter 1 has length -5"), "{f}");
        };
        for i in 0..=stream.len() {
            check(&[&stream[..i], &stream[i..]]);
            for j in (i..=stream.len()).step_by(7) {
                check(&[&stream[..i], &stream[i..j], &stream[j..]]);
            }
        }
    }
}
