//! Record boundaries: where a byte block may be cut so that every block
//! starts at the beginning of a record, also when quoted fields hold newlines.
//!
//! With RFC 4180 quoting (the default), the number of quote characters
//! before a position tells whether it is inside quotes: doubled quotes
//! toggle twice, and the parser rejects a quote inside an unquoted field.
//! So a cut needs one vectorised count of quotes up to the target and a
//! short scan after it. With a distinct escape character or comment lines
//! the parity trick does not hold, and a full state machine runs instead.

use memchr::{memchr, memchr_iter, memchr2, memrchr};

use crate::parse::Dialect;

/// Returns the first cut point `c > target` such that `data[..c]` ends with
/// the newline of a complete record, or `None` if there is none in `data`.
///
/// `data` must start at a record boundary.
pub fn find_boundary(data: &[u8], target: usize, d: &Dialect) -> Option<usize> {
    if target >= data.len() {
        return None;
    }
    let Some(q) = d.quote else {
        return memchr(b'\n', &data[target..]).map(|i| target + i + 1);
    };
    if d.distinct_escape().is_some() || d.comment.is_some() {
        return find_boundary_exact(data, target, d);
    }
    let inside = memchr_iter(q, &data[..target]).count() % 2 == 1;
    boundary_after(data, target, inside, q)
}

/// Whether [`find_boundary`] decides by the parity of the quotes before
/// the target (see [`find_boundary_given`]): a quote character, and no
/// distinct escape or comment lines.
pub fn cut_by_quote_parity(d: &Dialect) -> Option<u8> {
    d.quote
        .filter(|_| d.distinct_escape().is_none() && d.comment.is_none())
}

/// [`find_boundary`] for a dialect with [`cut_by_quote_parity`], told
/// whether `target` lies inside quotes (an odd number of quote
/// characters in `data[..target]`): a caller that counted them already
/// saves the pass over the block.
pub fn find_boundary_given(data: &[u8], target: usize, inside: bool, quote: u8) -> Option<usize> {
    if target >= data.len() {
        return None;
    }
    boundary_after(data, target, inside, quote)
}

fn boundary_after(data: &[u8], target: usize, mut inside: bool, q: u8) -> Option<usize> {
    let mut pos = target;
    while let Some(i) = memchr2(q, b'\n', &data[pos..]) {
        let p = pos + i;
        if data[p] == q {
            inside = !inside;
        } else if !inside {
            return Some(p + 1);
        }
        pos = p + 1;
    }
    None
}

/// Returns the last cut point `c` with `from < c <= to` (a position where
/// `data[..c]` ends with the newline of a complete record), or `None`: the
/// start of the record still open at `to`. The load asks it only when
/// [`find_boundary`] finds no cut, to cut off what precedes a long record.
///
/// `data` must start at a record boundary.
pub fn last_boundary(data: &[u8], from: usize, to: usize, d: &Dialect) -> Option<usize> {
    let to = to.min(data.len());
    if from >= to {
        return None;
    }
    let Some(q) = d.quote else {
        return memrchr(b'\n', &data[from..to]).map(|i| from + i + 1);
    };
    if d.distinct_escape().is_some() || d.comment.is_some() {
        return last_boundary_exact(data, from, to, d);
    }
    let mut inside = memchr_iter(q, &data[..from]).count() % 2 == 1;
    let mut last = None;
    let mut pos = from;
    while let Some(i) = memchr2(q, b'\n', &data[pos..to]) {
        let p = pos + i;
        if data[p] == q {
            inside = !inside;
        } else if !inside {
            last = Some(p + 1);
        }
        pos = p + 1;
    }
    last
}

/// [`last_boundary`] by the full state machine (escapes, comment lines).
fn last_boundary_exact(data: &[u8], from: usize, to: usize, d: &Dialect) -> Option<usize> {
    let mut last = None;
    walk_exact(data, to, d, |c| {
        if c > from {
            last = Some(c);
        }
        false
    });
    last
}

/// [`find_boundary`] by the full state machine: correct for escapes and
/// comment lines.
fn find_boundary_exact(data: &[u8], target: usize, d: &Dialect) -> Option<usize> {
    walk_exact(data, data.len(), d, |c| c > target)
}

/// Walks `data[..end]` from its start (a record boundary) with the full
/// state machine, calling `stop` with each cut point (the position after
/// a record's newline, comment lines included) until it returns true; that
/// cut point is returned.
fn walk_exact(
    data: &[u8],
    end: usize,
    d: &Dialect,
    mut stop: impl FnMut(usize) -> bool,
) -> Option<usize> {
    let q = d.quote;
    let esc = d.distinct_escape();
    let mut i = 0;
    let mut at_record_start = true;
    let mut in_quotes = false;
    while i < end {
        let c = data[i];
        if in_quotes {
            if Some(c) == esc {
                i += 2;
                continue;
            }
            if Some(c) == q {
                if d.doubling() && data.get(i + 1) == Some(&c) {
                    i += 2;
                    continue;
                }
                in_quotes = false;
            }
            i += 1;
            continue;
        }
        if at_record_start && d.starts_comment(&data[i..end]) {
            let nl = i + memchr(b'\n', &data[i..end])?;
            if stop(nl + 1) {
                return Some(nl + 1);
            }
            i = nl + 1;
            continue;
        }
        at_record_start = false;
        if Some(c) == q {
            in_quotes = true;
        } else if c == b'\n' {
            if stop(i + 1) {
                return Some(i + 1);
            }
            at_record_start = true;
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_newlines_are_not_boundaries() {
        let d = Dialect::default();
        let data = b"1,\"a\nb\"\n2,c\n";
        assert_eq!(find_boundary(data, 0, &d), Some(8));
        assert_eq!(find_boundary(data, 3, &d), Some(8));
        assert_eq!(find_boundary(data, 8, &d), Some(12));
        assert_eq!(find_boundary(data, 12, &d), None);
        let doubled = b"\"x\"\"\n\"\"y\"\n";
        assert_eq!(find_boundary(doubled, 1, &d), Some(10));
    }

    #[test]
    fn last_boundary_is_the_start_of_the_open_record() {
        let d = Dialect::default();
        // Records end at 4, 12 and 16; a quote opens at 16 and stays open.
        let data = b"1,a\n2,\"b\nc\"\n3,d\n4,\"e\nf\ng";
        assert_eq!(last_boundary(data, 0, data.len(), &d), Some(16));
        assert_eq!(last_boundary(data, 0, 15, &d), Some(12));
        assert_eq!(last_boundary(data, 4, 11, &d), None);
        assert_eq!(last_boundary(data, 16, data.len(), &d), None);
        assert_eq!(last_boundary(data, 12, data.len(), &d), Some(16));
        let exact = Dialect {
            escape: Some(b'\\'),
            comment: Some(b'#'),
            ..Dialect::default()
        };
        let data = b"#\"\n\"a\\\"\nb\"\nz\n\"open\n";
        assert_eq!(last_boundary(data, 0, data.len(), &exact), Some(13));
        assert_eq!(last_boundary(data, 0, 12, &exact), Some(11));
        assert_eq!(last_boundary(data, 3, 10, &exact), None);
        let no_quote = Dialect {
            quote: None,
            ..Dialect::default()
        };
        assert_eq!(last_boundary(b"\"a\n\"b\nc", 0, 7, &no_quote), Some(6));
        assert_eq!(last_boundary(b"\"a\n\"b\nc", 3, 5, &no_quote), None);
    }

    #[test]
    fn escapes_and_comments_use_the_state_machine() {
        let d = Dialect {
            escape: Some(b'\\'),
            comment: Some(b'#'),
            ..Dialect::default()
        };
        let data = b"#\"\n\"a\\\"\nb\"\nz\n";
        assert_eq!(find_boundary(data, 0, &d), Some(3));
        assert_eq!(find_boundary(data, 3, &d), Some(11));
        // A comment after spaces, as the parser skips it: its quote
        // opens nothing.
        let data = b"  #\"\n\"a\nb\"\nz\n";
        assert_eq!(find_boundary(data, 0, &d), Some(5));
        assert_eq!(find_boundary(data, 5, &d), Some(11));
        let no_quote = Dialect {
            quote: None,
            ..Dialect::default()
        };
        assert_eq!(find_boundary(b"\"a\n\"b\n", 1, &no_quote), Some(3));
    }
}
