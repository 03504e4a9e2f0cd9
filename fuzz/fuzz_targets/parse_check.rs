//! Feeds arbitrary UTF-8 to the front end: parsing and checking must never
//! panic, hang or overflow the stack, and rendering the diagnostics must
//! work for any of them.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|source: &str| {
    let (_, diagnostics) = argent_lang::check(source);
    let _ = argent_lang::render(&diagnostics, "fuzz.ag", source, false);
    if let Ok(pipeline) = argent_lang::compile(source) {
        // A valid pipeline accepts a schedule file parsed from the same text.
        let _ = argent_lang::parse_schedule(source, &pipeline);
    }
});
