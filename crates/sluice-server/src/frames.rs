//! Each connection's message loop, with the frontend messages checked as
//! their bytes arrive, before the protocol library decodes them.
//!
//! For: what the library's decoding gets wrong. It decodes a message's
//! fields from the stream, not from the message cut at its declared
//! length, and it reads them without bounds: a Bind or Parse whose
//! counts or lengths run past the message's end makes it panic, a
//! message whose length lies makes it read the next messages as part of
//! this one (or the rest of this one as the next), and it reads a Bind
//! parameter of any negative length as NULL. PostgreSQL reads each
//! message within its length and refuses one whose fields do not fill it
//! exactly ("insufficient data left in message", "invalid string in
//! message", "invalid message format": 08P01; then, in the extended
//! protocol, the messages up to the next Sync are skipped), and so does
//! sluice: [`Checked`] wraps the socket, follows the message framing,
//! holds each message of the types the library decodes field by field
//! until it is whole, reads it as PostgreSQL does, and hands on either
//! the message or, in its place, a Flush (a message of no content) and a
//! [`Fault`], which [`serve`] answers when the library hands it that
//! Flush. Not for: the messages themselves (the library decodes them;
//! the handlers answer them).
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

/// A Flush message: what a refused message is replaced with.
const FLUSH: [u8; 5] = [b'H', 0, 0, 0, 4];

/// The largest message of each type the library takes (its limits,
/// the 4 bytes of the length included): a longer one is passed on for
/// the library to refuse, not held.
fn limit(kind: u8) -> usize {
    match kind {
        b'Q' | b'P' | b'B' => 0x3fff_fffe,
        _ => 10_000,
    }
}

/// The types of message held whole and read before they are passed on:
/// those the library decodes field by field. (CopyData and the password
/// messages it takes whole by their length; an unknown type it refuses.)
fn held(kind: u8) -> bool {
    matches!(kind, b'Q' | b'P' | b'B' | b'E' | b'C' | b'D' | b'S' | b'H')
}

/// A message refused before the library saw it, in the order of the
/// Flush messages handed on (`None`: a Flush the client sent).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Fault {
    /// The refused message's type.
    kind: u8,
    /// What PostgreSQL says of it.
    message: String,
    /// The connection ends (a length that frames nothing).
    fatal: bool,
}

type Faults = Arc<Mutex<VecDeque<Option<Fault>>>>;

/// What is being read.
enum Part {
    /// A message's header (the type and length, or an untyped message's
    /// length and code), these bytes so far.
    Head(Vec<u8>),
    /// Bytes of a body passed on as they come: how many are left.
    Pass(usize),
    /// A body held until it is whole.
    Hold {
        kind: u8,
        body: Vec<u8>,
        left: usize,
    },
    /// After a fatal fault: nothing more is passed on.
    Dead,
}

/// Follows the framing of the frontend messages in a stream of bytes and
/// writes what the library is to read.
struct Scan {
    /// Past the startup message: every message is typed (one type byte,
    /// then its length).
    typed: bool,
    part: Part,
}

impl Default for Scan {
    fn default() -> Self {
        Scan {
            typed: false,
            part: Part::Head(Vec::new()),
        }
    }
}

impl Scan {
    /// Takes in the next bytes of the stream; appends to `out` what the
    /// library is to read, and to `faults` an entry for each Flush in it.
    fn feed(&mut self, mut b: &[u8], out: &mut Vec<u8>, faults: &Faults) {
        while !b.is_empty() {
            match &mut self.part {
                Part::Dead => return,
                Part::Pass(left) => {
                    let n = (*left).min(b.len());
                    out.extend_from_slice(&b[..n]);
                    *left -= n;
                    b = &b[n..];
                    if *left == 0 {
                        self.part = Part::Head(Vec::new());
                    }
                }
                Part::Hold { kind, body, left } => {
                    let n = (*left).min(b.len());
                    body.extend_from_slice(&b[..n]);
                    *left -= n;
                    b = &b[n..];
                    if *left == 0 {
                        let (kind, body) = (*kind, std::mem::take(body));
                        self.part = Part::Head(Vec::new());
                        self.whole(kind, &body, out, faults);
                    }
                }
                Part::Head(h) => {
                    let need = if self.typed { 5 } else { 8 };
                    let n = (need - h.len()).min(b.len());
                    h.extend_from_slice(&b[..n]);
                    b = &b[n..];
                    if h.len() < need {
                        continue;
                    }
                    let h = std::mem::take(h);
                    self.head(&h, out, faults);
                }
            }
        }
    }

    /// A header is complete.
    fn head(&mut self, h: &[u8], out: &mut Vec<u8>, faults: &Faults) {
        if !self.typed {
            let len = u32::from_be_bytes([h[0], h[1], h[2], h[3]]) as usize;
            let code = u32::from_be_bytes([h[4], h[5], h[6], h[7]]);
            out.extend_from_slice(h);
            // The startup message (or a cancel request) ends the untyped
            // messages; an SSL or GSS request does not. The library
            // refuses a length that frames nothing.
            self.typed = code != SSL_REQUEST && code != GSSENC_REQUEST;
            let left = len.saturating_sub(8);
            if left > 0 {
                self.part = Part::Pass(left);
            }
            return;
        }
        let kind = h[0];
        let len = i32::from_be_bytes([h[1], h[2], h[3], h[4]]);
        if len < 4 {
            // No message can be framed after it (PostgreSQL: FATAL).
            out.extend_from_slice(&FLUSH);
            push(
                faults,
                Some(Fault {
                    kind,
                    message: format!("invalid message length {len}"),
                    fatal: true,
                }),
            );
            self.part = Part::Dead;
            return;
        }
        let left = len as usize - 4;
        self.part = if held(kind) && (len as usize) <= limit(kind) {
            Part::Hold {
                kind,
                body: Vec::with_capacity(left.min(1 << 16)),
                left,
            }
        } else {
            out.extend_from_slice(h);
            Part::Pass(left)
        };
        if left == 0 {
            if let Part::Hold { kind, body, .. } =
                std::mem::replace(&mut self.part, Part::Head(Vec::new()))
            {
                self.whole(kind, &body, out, faults);
            }
        }
    }

    /// A held message is whole: passed on, or replaced.
    fn whole(&mut self, kind: u8, body: &[u8], out: &mut Vec<u8>, faults: &Faults) {
        match check(kind, body) {
            Ok(()) => {
                out.push(kind);
                out.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
                out.extend_from_slice(body);
                if kind == b'H' {
                    push(faults, None);
                }
            }
            Err(message) => {
                out.extend_from_slice(&FLUSH);
                push(
                    faults,
                    Some(Fault {
                        kind,
                        message,
                        fatal: false,
                    }),
                );
            }
        }
    }
}

fn push(faults: &Faults, f: Option<Fault>) {
    if let Ok(mut q) = faults.lock() {
        q.push_back(f);
    }
}

/// A message's body read as PostgreSQL reads it (`pq_getmsg*`).
struct Fields<'a> {
    body: &'a [u8],
    at: usize,
}

const SHORT: &str = "insufficient data left in message";

impl Fields<'_> {
    /// A NUL-terminated string.
    fn string(&mut self) -> Result<(), String> {
        match self.body[self.at..].iter().position(|&c| c == 0) {
            Some(e) => {
                self.at += e + 1;
                Ok(())
            }
            None => Err("invalid string in message".into()),
        }
    }

    /// `n` bytes, as an unsigned big-endian number.
    fn int(&mut self, n: usize) -> Result<u32, String> {
        let b = self.body.get(self.at..self.at + n).ok_or(SHORT)?;
        self.at += n;
        Ok(b.iter().fold(0u32, |v, &c| (v << 8) | c as u32))
    }

    fn skip(&mut self, n: usize) -> Result<(), String> {
        if self.body.len() - self.at < n {
            return Err(SHORT.into());
        }
        self.at += n;
        Ok(())
    }

    /// Nothing is left.
    fn end(&self) -> Result<(), String> {
        if self.at == self.body.len() {
            Ok(())
        } else {
            Err("invalid message format".into())
        }
    }
}

/// Whether PostgreSQL reads the body of a message of type `kind` without
/// a protocol error, and if not, what it says.
fn check(kind: u8, body: &[u8]) -> Result<(), String> {
    let mut f = Fields { body, at: 0 };
    match kind {
        b'Q' => f.string()?,
        b'P' => {
            f.string()?;
            f.string()?;
            let n = f.int(2)?;
            f.skip(4 * n as usize)?;
        }
        b'B' => {
            f.string()?;
            f.string()?;
            let n = f.int(2)?;
            f.skip(2 * n as usize)?;
            let params = f.int(2)?;
            for p in 1..=params {
                let len = f.int(4)? as i32;
                if len == -1 {
                    continue;
                }
                if len < 0 {
                    return Err(format!(
                        "{SHORT}: parameter {p} has length {len} (-1 is NULL; no other length is below 0)"
                    ));
                }
                f.skip(len as usize)?;
            }
            let n = f.int(2)?;
            f.skip(2 * n as usize)?;
        }
        b'E' => {
            f.string()?;
            f.int(4)?;
        }
        b'C' | b'D' => {
            // One byte: PostgreSQL's own words for its absence.
            f.int(1)
                .map_err(|_| "no data left in message".to_string())?;
            f.string()?;
        }
        _ => {}
    }
    f.end()
}

/// A socket whose incoming bytes pass through a [`Scan`].
pub(crate) struct Checked<S> {
    inner: S,
    scan: Scan,
    faults: Faults,
    /// What the scan let through and the library has not read yet, from
    /// `at`.
    out: Vec<u8>,
    at: usize,
}

impl<S: AsyncRead + Unpin> AsyncRead for Checked<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        loop {
            if me.at < me.out.len() || buf.remaining() == 0 {
                let n = (me.out.len() - me.at).min(buf.remaining());
                buf.put_slice(&me.out[me.at..me.at + n]);
                me.at += n;
                if me.at == me.out.len() {
                    me.out.clear();
                    me.at = 0;
                }
                return Poll::Ready(Ok(()));
            }
            // Nothing to hand on: read more (a message held whole, or
            // one refused, hands on nothing yet).
            let mut tmp = [0u8; 8192];
            let mut rb = ReadBuf::new(&mut tmp);
            match Pin::new(&mut me.inner).poll_read(cx, &mut rb) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                // The end of the stream; a message not yet whole is lost
                // with it.
                Poll::Ready(Ok(())) if rb.filled().is_empty() => return Poll::Ready(Ok(())),
                Poll::Ready(Ok(())) => me.scan.feed(rb.filled(), &mut me.out, &me.faults),
            }
        }
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
    let faults = Faults::default();
    let mut scan = Scan::default();
    let mut first = Vec::new();
    scan.feed(&old.read_buf, &mut first, &faults);
    let mut read_buf = old.read_buf;
    read_buf.clear();
    read_buf.extend_from_slice(&first);
    let mut parts = FramedParts::new(
        Checked {
            inner: old.io,
            scan,
            faults: faults.clone(),
            out: Vec::new(),
            at: 0,
        },
        old.codec,
    );
    parts.read_buf = read_buf;
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
        let mut extended_query = match socket.state() {
            PgWireConnectionState::CopyInProgress(e) => e,
            _ => msg.is_extended_query(),
        };
        let is_cancel = matches!(msg, PgWireFrontendMessage::CancelRequest(_));
        // A Flush in place of a message the scan refused: the error
        // PostgreSQL gives. While the messages up to a Sync are skipped,
        // nothing is said, unless the refused message was that Sync (it
        // ends the skipping, then fails).
        let fault = match &msg {
            PgWireFrontendMessage::Flush(_) => {
                faults.lock().ok().and_then(|mut q| q.pop_front()).flatten()
            }
            _ => None,
        };
        let skipping = matches!(socket.state(), PgWireConnectionState::AwaitingSync);
        let result = match fault {
            Some(f) if !f.fatal && skipping && f.kind != b'S' => Ok(()),
            Some(f) => {
                // (A fatal error is not followed by ReadyForQuery.)
                extended_query =
                    f.fatal || matches!(f.kind, b'P' | b'B' | b'E' | b'C' | b'D' | b'H');
                let severity = if f.fatal { "FATAL" } else { "ERROR" };
                Err(PgWireError::UserError(Box::new(ErrorInfo::new(
                    severity.into(),
                    "08P01".into(),
                    f.message,
                ))))
            }
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
        let fault = |b: &[u8]| check(b'B', b).err();
        assert_eq!(fault(&bind_body(&[1, -1, 0, 3])), None);
        let f = fault(&bind_body(&[1, -2])).unwrap();
        assert!(f.contains("parameter 2 has length -2"), "{f}");
        assert!(fault(&bind_body(&[i32::MIN])).is_some());
        // A length past the end of the message.
        let mut b = bind_body(&[4]);
        b.truncate(b.len() - 4);
        assert_eq!(fault(&b).unwrap(), SHORT);
        // No result formats; bytes after them.
        let b = bind_body(&[1]);
        assert!(fault(&b[..b.len() - 2]).is_some());
        let f = fault(&[b.as_slice(), b"x"].concat()).unwrap();
        assert_eq!(f, "invalid message format");
        assert_eq!(fault(b"\0s1").unwrap(), "invalid string in message");
        assert!(fault(b"").is_some());
    }

    #[test]
    fn each_message_type_is_read_as_postgresql_reads_it() {
        let ok = |k: u8, b: &[u8]| check(k, b);
        assert_eq!(ok(b'Q', b"SELECT 1\0"), Ok(()));
        assert_eq!(
            ok(b'Q', b"SELECT 1").unwrap_err(),
            "invalid string in message"
        );
        assert_eq!(
            ok(b'Q', b"SELECT 1\0x").unwrap_err(),
            "invalid message format"
        );
        assert_eq!(ok(b'P', b"s\0SELECT $1\0\0\x01\0\0\0\x17"), Ok(()));
        // 65,535 parameter types declared, none sent (the library
        // panicked on it).
        assert_eq!(ok(b'P', b"\0SELECT 1\0\xff\xff").unwrap_err(), SHORT);
        assert_eq!(ok(b'P', b"\0SELECT 1\0").unwrap_err(), SHORT);
        assert_eq!(ok(b'E', b"\0\0\0\0\0"), Ok(()));
        assert_eq!(ok(b'E', b"\0\0\0").unwrap_err(), SHORT);
        assert_eq!(ok(b'D', b"Sname\0"), Ok(()));
        assert_eq!(ok(b'C', b"").unwrap_err(), "no data left in message");
        assert_eq!(ok(b'C', b"P").unwrap_err(), "invalid string in message");
        assert_eq!(ok(b'S', b""), Ok(()));
        assert_eq!(ok(b'H', b"x").unwrap_err(), "invalid message format");
    }

    /// Runs `pieces` through a scan: what it hands on, and the faults.
    fn scanned(pieces: &[&[u8]]) -> (Vec<u8>, Vec<Option<Fault>>) {
        let faults = Faults::default();
        let mut s = Scan::default();
        let mut out = Vec::new();
        for p in pieces {
            s.feed(p, &mut out, &faults);
        }
        let f = faults.lock().unwrap().drain(..).collect();
        (out, f)
    }

    #[test]
    fn the_scan_hands_on_good_messages_and_flushes_for_bad_ones_split_anywhere() {
        // An SSL request, the startup message, a Parse, a Flush, two Binds
        // (the second malformed), a Parse of 65,535 types and none sent, a
        // Sync: fed in every split of one or two cuts, the library gets
        // the same bytes and the same faults.
        let mut stream = Vec::new();
        stream.extend(8u32.to_be_bytes());
        stream.extend(SSL_REQUEST.to_be_bytes());
        let startup = b"\0\x03\0\0user\0u\0\0";
        stream.extend(((startup.len() + 4) as u32).to_be_bytes());
        stream.extend(startup);
        let good = [
            message(b'P', b"s1\0SELECT $1\0\0\0"),
            message(b'H', b""),
            message(b'B', &bind_body(&[2, -1])),
        ]
        .concat();
        stream.extend(&good);
        stream.extend(message(b'B', &bind_body(&[-5])));
        stream.extend(message(b'P', b"\0SELECT 1\0\xff\xff"));
        stream.extend(message(b'S', b""));
        let want_out = [
            &stream[..8 + 4 + startup.len()],
            &good,
            &FLUSH,
            &FLUSH,
            &message(b'S', b""),
        ]
        .concat();
        let check = |pieces: &[&[u8]]| {
            let (out, faults) = scanned(pieces);
            assert_eq!(out, want_out);
            assert_eq!(faults.len(), 3);
            assert_eq!(faults[0], None);
            let f = faults[1].as_ref().unwrap();
            assert_eq!(f.kind, b'B');
            assert!(f.message.contains("parameter 1 has length -5"), "{f:?}");
            assert!(!f.fatal);
            assert_eq!(faults[2].as_ref().unwrap().kind, b'P');
        };
        for i in 0..=stream.len() {
            check(&[&stream[..i], &stream[i..]]);
            for j in (i..=stream.len()).step_by(7) {
                check(&[&stream[..i], &stream[i..j], &stream[j..]]);
            }
        }
    }

    #[test]
    fn a_length_that_frames_nothing_ends_the_stream() {
        let startup = b"\0\0\0\x08\0\x03\0\0";
        let (out, faults) = scanned(&[startup, b"Q\0\0\0\x02SELECT 1\0", b"more"]);
        assert_eq!(out, [&startup[..], &FLUSH].concat());
        assert_eq!(faults.len(), 1);
        assert!(faults[0].as_ref().unwrap().fatal);
        // A CopyData or an over-long message is passed on as it comes.
        let (out, faults) = scanned(&[startup, &message(b'd', b"\xff\0"), b"X\0\0\0\x04"]);
        assert_eq!(
            out,
            [&startup[..], &message(b'd', b"\xff\0"), b"X\0\0\0\x04"].concat()
        );
        assert!(faults.is_empty());
    }
}
