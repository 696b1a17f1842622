//! Inputs: files, directories, globs and standard input.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// One input stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    File(PathBuf),
    Stdin,
}

impl Input {
    /// The name used in messages: the path, or `<stdin>`.
    pub fn display_name(&self) -> String {
        match self {
            Input::File(p) => p.display().to_string(),
            Input::Stdin => "<stdin>".to_string(),
        }
    }

    /// Size in bytes when known (for progress).
    pub fn len(&self) -> Option<u64> {
        match self {
            Input::File(p) => std::fs::metadata(p).ok().map(|m| m.len()),
            Input::Stdin => None,
        }
    }

    /// Opens the input for reading.
    pub fn open(&self) -> Result<Box<dyn Read + Send>> {
        match self {
            Input::File(p) => {
                let f = File::open(p).map_err(|e| Error::io(p, e))?;
                if f.metadata().map(|m| m.is_dir()).unwrap_or(false) {
                    return Err(Error::Input {
                        path: self.display_name(),
                        message: "is a directory".into(),
                    });
                }
                Ok(Box::new(f))
            }
            Input::Stdin => Ok(Box::new(std::io::stdin())),
        }
    }
}

fn has_glob_meta(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// Expands command-line arguments into inputs, in a stable order: `-` is
/// standard input, a directory means every regular, non-hidden file under it
/// (sorted), a pattern with `*`, `?` or `[` is a glob (sorted).
pub fn expand(args: &[String]) -> Result<Vec<Input>> {
    let mut out = Vec::new();
    for a in args {
        if a == "-" {
            out.push(Input::Stdin);
            continue;
        }
        let p = Path::new(a);
        if p.is_dir() {
            let before = out.len();
            walk_dir(p, &mut out)?;
            if out.len() == before {
                return Err(Error::Input {
                    path: a.clone(),
                    message: "directory holds no files".into(),
                });
            }
        } else if p.exists() {
            out.push(Input::File(p.to_path_buf()));
        } else if has_glob_meta(a) {
            let paths =
                glob::glob(a).map_err(|e| Error::Config(format!("bad glob pattern {a:?}: {e}")))?;
            let mut files = Vec::new();
            for entry in paths {
                let path = entry.map_err(|e| Error::io(e.path().to_path_buf(), e.into()))?;
                if path.is_file() {
                    files.push(path);
                }
            }
            if files.is_empty() {
                return Err(Error::Input {
                    path: a.clone(),
                    message: "no files match this pattern".into(),
                });
            }
            files.sort();
            out.extend(files.into_iter().map(Input::File));
        } else {
            return Err(Error::Input {
                path: a.clone(),
                message: "no such file or directory".into(),
            });
        }
    }
    if out.is_empty() {
        return Err(Error::Config("no input files given".into()));
    }
    Ok(out)
}

fn walk_dir(dir: &Path, out: &mut Vec<Input>) -> Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .map(|e| e.map(|e| e.path()).map_err(|e| Error::io(dir, e)))
        .collect::<Result<_>>()?;
    entries.sort();
    for p in entries {
        let hidden = p
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with('.'));
        if hidden {
            continue;
        }
        if p.is_dir() {
            walk_dir(&p, out)?;
        } else if p.is_file() {
            out.push(Input::File(p));
        }
    }
    Ok(())
}

/// Rejects input that is not delimited text, by looking at its first bytes.
pub fn check_text(name: &str, head: &[u8]) -> Result<()> {
    let err = |message: String| {
        Err(Error::Input {
            path: name.to_string(),
            message,
        })
    };
    if head.starts_with(&[0x1f, 0x8b]) {
        return err("is gzip-compressed; compressed input is not supported yet (decompress it first, e.g. `zcat FILE | sluice load TABLE -`)".into());
    }
    if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        return err("is zstd-compressed; compressed input is not supported yet (decompress it first, e.g. `zstdcat FILE | sluice load TABLE -`)".into());
    }
    if let Some(i) = memchr::memchr(0, &head[..head.len().min(8192)]) {
        return err(format!(
            "looks like a binary file (NUL byte at offset {i}), not delimited text"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_and_compressed_heads_are_refused() {
        assert!(check_text("a", b"id,name\n1,x\n").is_ok());
        let e = check_text("a.gz", &[0x1f, 0x8b, 8, 0])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("a.gz: is gzip-compressed"), "{e}");
        let e = check_text("b", b"ab\0cd").unwrap_err().to_string();
        assert_eq!(
            e,
            "b: looks like a binary file (NUL byte at offset 2), not delimited text"
        );
    }
}
