//! Every example program lowers with its own schedule and with none.

use argent_lower::{LowerOptions, lower};

fn examples() -> Vec<(String, String)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
    let mut out: Vec<(String, String)> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "ag"))
                .map(|p| {
                    (
                        p.file_name().unwrap().to_string_lossy().into_owned(),
                        std::fs::read_to_string(&p).unwrap(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

#[test]
fn every_example_lowers() {
    let mut failures = Vec::new();
    let only = std::env::var("ONLY").unwrap_or_default();
    for (name, src) in examples().into_iter().filter(|(n, _)| n.contains(&only)) {
        let Ok(p) = argent_lang::compile(&src) else {
            eprintln!("{name}: does not compile yet");
            continue;
        };
        let mut unscheduled = p.clone();
        unscheduled.schedule = Default::default();
        // Without a schedule every pure func is inlined; for long pipelines
        // that makes expressions exponentially large (as in Halide), so
        // only short ones are checked that way.
        let mut cases = vec![("own schedule", &p)];
        if p.funcs.len() <= 12 {
            cases.push(("no schedule", &unscheduled));
        }
        for (label, p) in cases {
            let start = std::time::Instant::now();
            let r = lower(p, &LowerOptions::default());
            eprintln!(
                "{name} ({label}): {:?} {}",
                start.elapsed(),
                r.as_ref()
                    .map(|l| l.loop_nest.to_string().len())
                    .unwrap_or(0)
            );
            if let Err(e) = r {
                eprintln!("  {e}");
                failures.push(format!("{name} ({label}): {e}"));
            }
        }
    }
    // Every example lowers (a known failure would be listed here with its
    // cause, so that a fix or a regression both show up).
    let known: [&str; 0] = [];
    let failed: Vec<String> = failures
        .iter()
        .map(|f| f.split(':').next().unwrap_or("").to_string())
        .collect();
    if only.is_empty() {
        assert_eq!(failed, known, "{}", failures.join("\n"));
    }
}
