//! Grouping sets at run time (the plan's side: `plan::grouping`).
//!
//! The aggregate folds each input row once per set: the keys its set
//! does not group by are NULL, and a last key is the set's number, so
//! that every set has groups of its own in the one group table. A set of
//! no keys is a grand total: one row even over no input rows, which
//! [`with_empty_sets`] adds when no row came.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Int64Array, new_null_array};
use arrow_schema::DataType as A;

use super::agg::{AggCall, GroupTable};
use super::expr::exec_err;
use crate::error::Result;

/// For each set, the set its groups are made from when not from the
/// rows (see [`GroupTable::roll_up`]): a set none other holds is folded
/// from the rows (`None`); another is made from the smallest set that
/// holds all of its keys and more (fewest keys; of those, the first).
/// ROLLUP (a, b, c) folds the rows once, into (a, b, c); (a, b) is made
/// from its groups, (a) from (a, b)'s, () from (a)'s.
pub fn bases(sets: &[Vec<bool>]) -> Vec<Option<usize>> {
    let holds = |t: &[bool], s: &[bool]| {
        t.iter().zip(s).all(|(&a, &b)| a || !b) && t.iter().zip(s).any(|(&a, &b)| a && !b)
    };
    let keys = |s: &[bool]| s.iter().filter(|&&b| b).count();
    sets.iter()
        .map(|s| {
            (0..sets.len())
                .filter(|&t| holds(&sets[t], s))
                .min_by_key(|&t| (keys(&sets[t]), t))
        })
        .collect()
}

/// The group keys of set number `set` (`present`: the keys it groups
/// by) from the evaluated keys `keys` (the set-number key last) of `rows`
/// rows of the types `types`.
pub fn set_keys(
    keys: &[ArrayRef],
    present: &[bool],
    set: usize,
    types: &[A],
    rows: usize,
) -> Result<Vec<ArrayRef>> {
    let mut out = Vec::with_capacity(present.len() + 1);
    for ((k, &p), t) in keys.iter().zip(present).zip(types) {
        out.push(if !p {
            new_null_array(t, rows)
        } else if k.data_type() != t {
            // A key a CASE of labels made dictionary-encoded: one type
            // for all sets, as the NULL keys of the others.
            arrow_cast::cast(k, t).map_err(exec_err)?
        } else {
            k.clone()
        });
    }
    out.push(Arc::new(Int64Array::from(vec![set as i64; rows])));
    Ok(out)
}

/// The aggregate's output columns (`cols`: keys, the set number, then
/// the aggregates) with a row for each set of no keys that no input row
/// reached: NULL keys and the aggregates over no rows (count 0, the
/// others NULL).
pub fn with_empty_sets(
    cols: Vec<ArrayRef>,
    sets: &[Vec<bool>],
    key_types: &[A],
    aggs: &Arc<Vec<AggCall>>,
) -> Result<Vec<ArrayRef>> {
    let n = sets.first().map_or(0, |s| s.len());
    let Some(numbers) = cols
        .get(n)
        .and_then(|c| c.as_any().downcast_ref::<Int64Array>())
    else {
        return Err(crate::error::Error::Internal(
            "grouping sets without their numbers".into(),
        ));
    };
    let missing: Vec<i64> = sets
        .iter()
        .enumerate()
        .filter(|(s, set)| {
            !set.iter().any(|&b| b) && !numbers.values().iter().any(|&x| x == *s as i64)
        })
        .map(|(s, _)| s as i64)
        .collect();
    if missing.is_empty() {
        return Ok(cols);
    }
    let m = missing.len();
    let totals = GroupTable::new(&[], aggs.clone())?.finish()?;
    let mut extra: Vec<ArrayRef> = key_types[..n]
        .iter()
        .map(|t| new_null_array(t, m))
        .collect();
    extra.push(Arc::new(Int64Array::from(missing)));
    for t in &totals {
        let repeat = arrow_array::UInt32Array::from(vec![0u32; m]);
        extra.push(arrow_select::take::take(t.as_ref(), &repeat, None).map_err(exec_err)?);
    }
    cols.iter()
        .zip(&extra)
        .map(|(c, e)| arrow_select::concat::concat(&[c.as_ref(), e.as_ref()]).map_err(exec_err))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_held_by_another_are_made_from_it() {
        let v = |s: &str| s.chars().map(|c| c == '1').collect::<Vec<bool>>();
        // ROLLUP (a, b, c): all from (a, b, c).
        let rollup = [v("111"), v("110"), v("100"), v("000")];
        assert_eq!(bases(&rollup), vec![None, Some(0), Some(1), Some(2)]);
        // GROUPING SETS ((a), (b), ()): (a) and (b) from the rows, () from (a).
        let apart = [v("10"), v("01"), v("00")];
        assert_eq!(bases(&apart), vec![None, None, Some(0)]);
        // The same set twice: both from the rows (neither holds more).
        let twice = [v("10"), v("10")];
        assert_eq!(bases(&twice), vec![None, None]);
        // CUBE (a, b).
        let cube = [v("11"), v("10"), v("01"), v("00")];
        assert_eq!(bases(&cube), vec![None, Some(0), Some(0), Some(1)]);
    }
}
