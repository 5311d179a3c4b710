//! What the bench's binaries share.

/// The median of `v`, which it sorts: of an even count, the mean of the
/// middle two; NaN for none.
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match (v.get(n.wrapping_sub(1) / 2), v.get(n / 2)) {
        (Some(a), Some(b)) => (a + b) / 2.0,
        _ => f64::NAN,
    }
}

/// How many bytes the largest of `sizes` holds beyond the smallest (0 for
/// none): how unevenly records were spread over partitions.
pub fn spread(sizes: &[u64]) -> u64 {
    let (least, most) = (sizes.iter().min(), sizes.iter().max());
    most.zip(least).map_or(0, |(m, l)| m - l)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_odd_even_and_no_counts() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&mut []).is_nan());
    }

    #[test]
    fn the_spread_is_the_largest_less_the_smallest() {
        assert_eq!(spread(&[5, 9, 7]), 4);
        assert_eq!(spread(&[]), 0);
    }
}
