//! Project automation: `cargo xtask <task>`. See `cargo xtask help`.

fn main() {
    let task = std::env::args().nth(1).unwrap_or_else(|| "help".into());
    match task.as_str() {
        _ => {
            eprintln!("usage: cargo xtask <task>\n\ntasks:\n  help    this text");
        }
    }
}
