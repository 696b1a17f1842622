//! Who may connect: SCRAM-SHA-256 and clear-text passwords against the
//! users file, and TLS.

use std::path::Path;
use std::sync::Arc;

use sluice_server::auth::{Auth, Users};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_postgres::NoTls;

use crate::{Server, TempDir, code, sample};

fn users(dir: &TempDir) -> Users {
    let f = dir.0.join("users");
    Users::add(&f, "ada", "pencil and paper").unwrap();
    Users::add(&f, "bob", "other").unwrap();
    Users::read(&f).unwrap()
}

async fn connect(srv: &Server, user: &str, password: &str) -> Result<i64, tokio_postgres::Error> {
    let (c, conn) = tokio_postgres::connect(
        &format!(
            "host=127.0.0.1 port={} user={user} password='{password}'",
            srv.addr.port()
        ),
        NoTls,
    )
    .await?;
    tokio::spawn(conn);
    Ok(c.query_one("SELECT count(*) FROM people", &[])
        .await?
        .get(0))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scram_and_password_check_the_users_file() {
    let dir = sample(10);
    let u = users(&dir);
    for auth in [Auth::Scram, Auth::Password] {
        let srv = Server::start(&dir.0.join("db"), |o| {
            o.auth = auth;
            o.users = u.clone();
        });
        assert_eq!(connect(&srv, "ada", "pencil and paper").await.unwrap(), 3);
        assert_eq!(connect(&srv, "bob", "other").await.unwrap(), 3);
        for (user, pw) in [
            ("ada", "other"),
            ("ada", ""),
            ("carol", "other"),
            // A user not in the file matches no password, the empty one
            // included.
            ("carol", ""),
        ] {
            let e = connect(&srv, user, pw).await.unwrap_err();
            assert_eq!(code(&e), "28P01", "{auth:?} {user}: {e}");
            let msg = e.as_db_error().map(|d| d.message().to_string());
            assert_eq!(
                msg.as_deref(),
                Some(format!("password authentication failed for user \"{user}\"").as_str())
            );
        }
    }
    // With TLS set up, a clear-text password is refused without it.
    let tls = sluice_server::Tls::from_pem(&fixture("cert.pem"), &fixture("key.pem")).unwrap();
    let srv = Server::start(&dir.0.join("db"), |o| {
        o.auth = Auth::Password;
        o.users = u.clone();
        o.tls = Some(tls);
    });
    let e = connect(&srv, "ada", "pencil and paper").await.unwrap_err();
    assert_eq!(code(&e), "28000", "{e:?}");
    // Trust takes anyone.
    let srv = Server::start(&dir.0.join("db"), |_| {});
    assert_eq!(connect(&srv, "anyone", "x").await.unwrap(), 3);
}

/// Accepts any certificate: the test is of the server's TLS, not of PKI.
#[derive(Debug)]
struct AnyCert(Arc<tokio_rustls::rustls::crypto::CryptoProvider>);

impl tokio_rustls::rustls::client::danger::ServerCertVerifier for AnyCert {
    fn verify_server_cert(
        &self,
        _: &rustls_pki_types::CertificateDer<'_>,
        _: &[rustls_pki_types::CertificateDer<'_>],
        _: &rustls_pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls_pki_types::UnixTime,
    ) -> Result<tokio_rustls::rustls::client::danger::ServerCertVerified, tokio_rustls::rustls::Error>
    {
        Ok(tokio_rustls::rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &rustls_pki_types::CertificateDer<'_>,
        d: &tokio_rustls::rustls::DigitallySignedStruct,
    ) -> Result<
        tokio_rustls::rustls::client::danger::HandshakeSignatureValid,
        tokio_rustls::rustls::Error,
    > {
        tokio_rustls::rustls::crypto::verify_tls12_signature(
            m,
            c,
            d,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &rustls_pki_types::CertificateDer<'_>,
        d: &tokio_rustls::rustls::DigitallySignedStruct,
    ) -> Result<
        tokio_rustls::rustls::client::danger::HandshakeSignatureValid,
        tokio_rustls::rustls::Error,
    > {
        tokio_rustls::rustls::crypto::verify_tls13_signature(
            m,
            c,
            d,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<tokio_rustls::rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/it/tls")
        .join(name)
}

/// SSLRequest: the server's one-byte answer.
async fn ssl_request(s: &mut tokio::net::TcpStream) -> u8 {
    let mut m = 8i32.to_be_bytes().to_vec();
    m.extend_from_slice(&80_877_103i32.to_be_bytes());
    s.write_all(&m).await.unwrap();
    let mut b = [0u8; 1];
    s.read_exact(&mut b).await.unwrap();
    b[0]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_when_configured_and_a_plain_no_when_not() {
    let dir = sample(10);
    let tls = sluice_server::Tls::from_pem(&fixture("cert.pem"), &fixture("key.pem")).unwrap();
    let srv = Server::start(&dir.0.join("db"), |o| o.tls = Some(tls));
    let mut s = tokio::net::TcpStream::connect(srv.addr).await.unwrap();
    assert_eq!(ssl_request(&mut s).await, b'S');
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = tokio_rustls::rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCert(provider)))
        .with_no_client_auth();
    let mut t = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(
            rustls_pki_types::ServerName::try_from("localhost").unwrap(),
            s,
        )
        .await
        .unwrap();
    // Startup, then a query, inside TLS.
    let body = b"user\0test\0\0";
    let mut m = ((8 + body.len()) as i32).to_be_bytes().to_vec();
    m.extend_from_slice(&196_608i32.to_be_bytes());
    m.extend_from_slice(body);
    let q = b"SELECT name FROM people WHERE id = 1\0";
    m.push(b'Q');
    m.extend_from_slice(&((4 + q.len()) as i32).to_be_bytes());
    m.extend_from_slice(q);
    t.write_all(&m).await.unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let mut ready = 0;
    while ready < 2 {
        let n = t.read(&mut buf).await.unwrap();
        assert!(n > 0, "closed before the answer: {out:?}");
        out.extend_from_slice(&buf[..n]);
        ready = out.windows(6).filter(|w| w == b"Z\0\0\0\x05I").count();
    }
    assert!(
        out.windows(3).any(|w| w == b"ada"),
        "no row in {}",
        String::from_utf8_lossy(&out)
    );
    // A server without TLS answers N and goes on in plain text.
    let plain = Server::start(&dir.0.join("db"), |_| {});
    let mut s = tokio::net::TcpStream::connect(plain.addr).await.unwrap();
    assert_eq!(ssl_request(&mut s).await, b'N');
}

#[test]
fn a_bad_certificate_or_key_is_an_error_that_names_the_file() {
    let dir = TempDir::new("tls");
    let junk = dir.0.join("junk.pem");
    std::fs::write(&junk, "not a certificate").unwrap();
    let e = sluice_server::Tls::from_pem(&junk, &fixture("key.pem")).unwrap_err();
    assert!(e.message.contains("junk.pem"), "{}", e.message);
    let e = sluice_server::Tls::from_pem(&fixture("cert.pem"), &junk).unwrap_err();
    assert!(e.message.contains("junk.pem"), "{}", e.message);
    let e = sluice_server::Tls::from_pem(&dir.0.join("missing.pem"), &junk).unwrap_err();
    assert!(e.message.contains("missing.pem"), "{}", e.message);
}
