use super::*;

#[test]
fn percentiles_use_nearest_rank() {
    let v = [5.0, 1.0, 4.0, 2.0, 3.0];
    assert_eq!(median(&v), Some(3.0));
    assert_eq!(percentile(&v, 0.0), Some(1.0));
    assert_eq!(percentile(&v, 100.0), Some(5.0));
    assert_eq!(percentile(&v, 90.0), Some(5.0));
    assert_eq!(percentile(&v, 20.0), Some(1.0));
    assert_eq!(median(&[]), None);
}

#[test]
fn ratio_of_zero_is_nan() {
    assert!(ratio(1.0, 0.0).is_nan());
    assert_eq!(ratio(3.0, 2.0), 1.5);
    assert_eq!(ms(Duration::from_micros(1500)), 1.5);
}
