//! Record codec benchmarks (being written on the codec branch).
fn main() {}
