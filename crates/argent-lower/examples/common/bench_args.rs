//! What the compile-time benchmark examples share (`pass_times` in
//! argent-lower, `compile_bench` in argent-web, which includes this file by
//! path): their command line and the median they print.

/// `[-n N] [--print PASS] FILE.ag...`; `--print` only where `print_allowed`.
pub struct BenchArgs {
    pub iterations: usize,
    pub files: Vec<String>,
    pub print_after: Option<String>,
}

impl BenchArgs {
    pub fn parse(default_iterations: usize, print_allowed: bool) -> BenchArgs {
        let mut parsed = BenchArgs {
            iterations: default_iterations,
            files: Vec::new(),
            print_after: None,
        };
        let mut args = std::env::args().skip(1);
        while let Some(arg) = args.next() {
            if arg == "-n" {
                parsed.iterations = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .expect("-n takes a count");
            } else if arg == "--print" {
                assert!(print_allowed, "--print is not an option of this benchmark");
                parsed.print_after = args.next();
            } else {
                parsed.files.push(arg);
            }
        }
        parsed
    }
}

pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
