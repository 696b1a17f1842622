//! Who may connect: `--auth trust|password|scram-sha-256` and the users
//! file.
//!
//! The users file holds one user a line, `NAME:VERIFIER`, where the
//! verifier is PostgreSQL's SCRAM form
//! `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>` (base64):
//! never a password, nor anything a password can be read back from.
//! `scram-sha-256` checks the client's proof against it (the password
//! never crosses the wire); `password` takes the password in clear text
//! (use it under TLS) and checks it by deriving the same keys.

use std::collections::HashMap;
use std::fmt::Debug;
use std::path::Path;
use std::str::FromStr;

use async_trait::async_trait;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use pgwire::api::auth::sasl::scram::ScramSecret;
use pgwire::api::auth::{AuthSource, LoginInfo, Password};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use ring::{digest, hmac};

use crate::Failure;

/// How connections authenticate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// Anyone who can connect (loopback addresses only).
    Trust,
    /// A password sent in clear text, checked against the users file.
    Password,
    /// SCRAM-SHA-256 against the users file.
    Scram,
}

impl FromStr for Auth {
    type Err = String;

    fn from_str(s: &str) -> Result<Auth, String> {
        match s.to_ascii_lowercase().as_str() {
            "trust" => Ok(Auth::Trust),
            "password" => Ok(Auth::Password),
            "scram-sha-256" | "scram" => Ok(Auth::Scram),
            _ => Err(format!(
                "unknown --auth {s:?}: use trust, password or scram-sha-256"
            )),
        }
    }
}

/// PBKDF2 iterations of a new verifier (PostgreSQL's default).
pub const ITERATIONS: u32 = 4096;

/// A user's SCRAM verifier.
#[derive(Clone, PartialEq, Eq)]
pub struct Verifier {
    pub iterations: u32,
    pub salt: Vec<u8>,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
}

impl Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier")
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

fn hmac_sha256(key: &[u8], msg: &[u8]) -> Vec<u8> {
    hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), msg)
        .as_ref()
        .to_vec()
}

impl Verifier {
    /// The verifier of `password` with `salt`. The password is normalized
    /// with SASLprep first, as libpq and PostgreSQL do.
    pub fn new(password: &str, salt: &[u8], iterations: u32) -> Verifier {
        let salted = pgwire::api::auth::sasl::scram::gen_salted_password(
            password,
            salt,
            iterations.max(1) as usize,
        );
        let client_key = hmac_sha256(&salted, b"Client Key");
        Verifier {
            iterations,
            salt: salt.to_vec(),
            stored_key: digest::digest(&digest::SHA256, &client_key)
                .as_ref()
                .to_vec(),
            server_key: hmac_sha256(&salted, b"Server Key"),
        }
    }

    /// A new verifier of `password` with a random salt.
    pub fn random(password: &str) -> Result<Verifier, Failure> {
        use ring::rand::SecureRandom;
        let mut salt = [0u8; 16];
        ring::rand::SystemRandom::new()
            .fill(&mut salt)
            .map_err(|_| Failure::internal("no random numbers for a salt"))?;
        Ok(Verifier::new(password, &salt, ITERATIONS))
    }

    /// Whether `password` is the one this verifies (constant time).
    pub fn accepts(&self, password: &str) -> bool {
        let other = Verifier::new(password, &self.salt, self.iterations);
        // Every byte compared, whatever the first difference.
        other.stored_key.len() == self.stored_key.len()
            && other
                .stored_key
                .iter()
                .zip(&self.stored_key)
                .fold(0u8, |d, (a, b)| d | (a ^ b))
                == 0
    }

    /// PostgreSQL's text form.
    pub fn to_text(&self) -> String {
        format!(
            "SCRAM-SHA-256${}:{}${}:{}",
            self.iterations,
            B64.encode(&self.salt),
            B64.encode(&self.stored_key),
            B64.encode(&self.server_key)
        )
    }

    pub fn parse(s: &str) -> Option<Verifier> {
        let rest = s.strip_prefix("SCRAM-SHA-256$")?;
        let (head, keys) = rest.split_once('$')?;
        let (iters, salt) = head.split_once(':')?;
        let (stored, server) = keys.split_once(':')?;
        let v = Verifier {
            iterations: iters.parse().ok().filter(|&i| i > 0)?,
            salt: B64.decode(salt).ok()?,
            stored_key: B64.decode(stored).ok()?,
            server_key: B64.decode(server).ok()?,
        };
        (v.stored_key.len() == 32 && v.server_key.len() == 32).then_some(v)
    }
}

/// The users file: names and verifiers.
#[derive(Debug, Default, Clone)]
pub struct Users {
    users: HashMap<String, Verifier>,
}

impl Users {
    /// Reads `path`; a line that is not `NAME:VERIFIER` is an error that
    /// names it.
    pub fn read(path: &Path) -> Result<Users, Failure> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Failure::new(
                "58030",
                format!(
                    "cannot read the users file {}: {e} (add a user with: sluice serve --add-user NAME)",
                    path.display()
                ),
            )
        })?;
        let mut users = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = || {
                Failure::new(
                    "F0000",
                    format!(
                        "{}:{}: not NAME:SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>",
                        path.display(),
                        i + 1
                    ),
                )
            };
            let (name, v) = line.split_once(':').ok_or_else(bad)?;
            let v = Verifier::parse(v).ok_or_else(bad)?;
            users.insert(name.to_string(), v);
        }
        Ok(Users { users })
    }

    pub fn len(&self) -> usize {
        self.users.len()
    }

    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }

    pub fn get(&self, name: &str) -> Option<&Verifier> {
        self.users.get(name)
    }

    /// Adds (or replaces) `name` in the users file at `path` with a new
    /// verifier of `password`; the file is replaced whole (a rename), and
    /// readable by its owner alone.
    pub fn add(path: &Path, name: &str, password: &str) -> Result<(), Failure> {
        if name.is_empty() || name.contains([':', '\n', '\r']) {
            return Err(Failure::new(
                "22023",
                format!("user name {name:?}: must be non-empty, without ':' or line breaks"),
            ));
        }
        if password.is_empty() {
            return Err(Failure::new("22023", "an empty password is not accepted"));
        }
        let old = if path.exists() {
            std::fs::read_to_string(path)
                .map_err(|e| Failure::new("58030", format!("reading {}: {e}", path.display())))?
        } else {
            String::new()
        };
        let mut out: String = old
            .lines()
            .filter(|l| l.split_once(':').map(|(n, _)| n) != Some(name))
            .map(|l| format!("{l}\n"))
            .collect();
        out.push_str(&format!(
            "{name}:{}\n",
            Verifier::random(password)?.to_text()
        ));
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        let io =
            |e: std::io::Error| Failure::new("58030", format!("writing {}: {e}", path.display()));
        {
            use std::io::Write;
            // A new file of this process's (never a leftover or a link
            // someone put there), readable by its owner alone.
            let _ = std::fs::remove_file(&tmp);
            let mut o = std::fs::OpenOptions::new();
            o.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
            let mut f = o.open(&tmp).map_err(io)?;
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                f.set_permissions(std::fs::Permissions::from_mode(0o600))
                    .map_err(io)?;
            }
            f.write_all(out.as_bytes()).map_err(io)?;
            f.sync_all().map_err(io)?;
        }
        std::fs::rename(&tmp, path).map_err(io)?;
        Ok(())
    }
}

fn refused(user: &str) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        "FATAL".to_string(),
        "28P01".to_string(),
        format!("password authentication failed for user \"{user}\""),
    )))
}

/// The users file as pgwire's source of credentials.
#[derive(Debug)]
pub struct Source {
    users: Users,
    /// A random key of this process: the verifiers of users not in the
    /// file are made from it, so that no password matches them.
    secret: [u8; 32],
}

impl Source {
    pub fn new(users: Users) -> Result<Source, Failure> {
        use ring::rand::SecureRandom;
        let mut secret = [0u8; 32];
        ring::rand::SystemRandom::new()
            .fill(&mut secret)
            .map_err(|_| Failure::internal("no random numbers for the server's key"))?;
        Ok(Source { users, secret })
    }

    /// `user`'s verifier; for a user not in the file, one that no password
    /// matches, the same at each try (which users exist is told neither
    /// by the exchange nor by its time: no key is derived here).
    fn verifier(&self, user: &str) -> Verifier {
        match self.users.get(user) {
            Some(v) => v.clone(),
            None => {
                let derive =
                    |what: &str| hmac_sha256(&self.secret, format!("{what}\0{user}").as_bytes());
                Verifier {
                    iterations: ITERATIONS,
                    salt: derive("salt")[..16].to_vec(),
                    stored_key: derive("stored key"),
                    server_key: derive("server key"),
                }
            }
        }
    }
}

#[async_trait]
impl AuthSource for Source {
    async fn get_password(&self, login: &LoginInfo) -> PgWireResult<Password> {
        // Only verifiers are kept: there is no password to give.
        Err(refused(login.user().unwrap_or_default()))
    }

    async fn verify_password(
        &self,
        login: &LoginInfo,
        presented: &[u8],
    ) -> PgWireResult<Option<()>> {
        let user = login.user().unwrap_or_default();
        let pw = std::str::from_utf8(presented).map_err(|_| refused(user))?;
        // The password message ends with its NUL in some clients.
        let pw = pw.strip_suffix('\0').unwrap_or(pw);
        // A user not in the file costs the same derivation, and fails.
        if self.verifier(user).accepts(pw) && self.users.get(user).is_some() {
            Ok(None)
        } else {
            Err(refused(user))
        }
    }

    async fn get_scram_secret(&self, login: &LoginInfo) -> PgWireResult<(ScramSecret, Option<()>)> {
        let v = self.verifier(login.user().unwrap_or_default());
        Ok((
            ScramSecret::Verifier {
                salt: v.salt,
                iterations: v.iterations as usize,
                stored_key: v.stored_key,
                server_key: v.server_key,
            },
            None,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verifiers_read_back_and_check_passwords() {
        let v = Verifier::new("pencil", b"0123456789abcdef", 4096);
        let text = v.to_text();
        assert!(text.starts_with("SCRAM-SHA-256$4096:"), "{text}");
        assert!(!text.contains("pencil"));
        let back = Verifier::parse(&text).unwrap();
        assert_eq!(back, v);
        assert!(back.accepts("pencil"));
        assert!(!back.accepts("pencil "));
        assert!(!back.accepts(""));
        for bad in [
            "",
            "SCRAM-SHA-256$",
            "SCRAM-SHA-256$0:AA==$AA==:AA==",
            "md5abc",
            &text[..text.len() - 4],
        ] {
            assert!(Verifier::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn the_keys_are_rfc_7677s() {
        // RFC 7677's example: user, pencil, salt W22ZaJ0SNY7soEsUEjb6gQ==, 4096.
        let salt = B64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let v = Verifier::new("pencil", &salt, 4096);
        // ServerSignature in the RFC is over an AuthMessage; the stored
        // and server keys are checked here through the client proof the
        // RFC gives: ClientProof XOR ClientSignature = ClientKey, and
        // SHA-256(ClientKey) = StoredKey.
        let auth_message = "n=user,r=rOprNGfwEbeRWgbNEkqO,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
        let proof = B64
            .decode("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
            .unwrap();
        let sig = hmac_sha256(&v.stored_key, auth_message.as_bytes());
        let client_key: Vec<u8> = proof.iter().zip(&sig).map(|(a, b)| a ^ b).collect();
        assert_eq!(
            digest::digest(&digest::SHA256, &client_key).as_ref(),
            &v.stored_key[..]
        );
        let server_sig = hmac_sha256(&v.server_key, auth_message.as_bytes());
        assert_eq!(
            B64.encode(server_sig),
            "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
        );
    }

    #[test]
    fn a_user_not_in_the_file_matches_no_password() {
        let mut u = Users::default();
        u.users
            .insert("ada".into(), Verifier::new("pencil", b"salt", 4096));
        let src = Source::new(u).unwrap();
        let fake = src.verifier("nobody");
        for pw in ["", "pencil", "nobody"] {
            assert!(!fake.accepts(pw), "{pw:?}");
        }
        // The same each time (a retry tells nothing), another per name.
        assert_eq!(src.verifier("nobody"), fake);
        assert_ne!(src.verifier("other").salt, fake.salt);
        assert!(src.verifier("ada").accepts("pencil"));
    }

    #[test]
    fn passwords_are_normalized_as_postgresql_does() {
        // SASLprep maps a no-break space to a space.
        let v = Verifier::new("pen cil", b"salt", 4096);
        assert!(v.accepts("pen\u{a0}cil"));
    }

    #[test]
    fn the_users_file_is_written_and_read() {
        let dir = std::env::temp_dir().join(format!("sluice-users-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let f = dir.join("users");
        let _ = std::fs::remove_file(&f);
        Users::add(&f, "ada", "one").unwrap();
        Users::add(&f, "bob", "two").unwrap();
        Users::add(&f, "ada", "three").unwrap();
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(!text.contains("three") && !text.contains("two"));
        let u = Users::read(&f).unwrap();
        assert_eq!(u.len(), 2);
        assert!(u.get("ada").unwrap().accepts("three"));
        assert!(!u.get("ada").unwrap().accepts("one"));
        assert!(u.get("bob").unwrap().accepts("two"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&f).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "readable by others: {mode:o}");
        }
        assert!(Users::add(&f, "a:b", "x").is_err());
        assert!(Users::add(&f, "c", "").is_err());
        std::fs::write(&f, "ada:nonsense\n").unwrap();
        let e = Users::read(&f).unwrap_err();
        assert!(e.message.contains(":1:"), "{}", e.message);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
