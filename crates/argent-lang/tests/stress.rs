//! A deterministic stress test of the whole front end: random token soup
//! drawn from the grammar's vocabulary, and random mutations of valid
//! programs. Nothing may panic or overflow the stack, and every error must
//! render. (The cargo-fuzz target in `fuzz/` does the same with coverage
//! guidance; this test runs everywhere, including CI without nightly.)

/// xorshift64*: small, deterministic, good enough to pick tokens.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const VOCABULARY: &[&str] = &[
    "input",
    "param",
    "rdom",
    "border",
    "output",
    "schedule",
    "let",
    "in",
    "where",
    "width",
    "u8",
    "u16",
    "i32",
    "f32",
    "bool",
    "x",
    "y",
    "c",
    "r",
    "r.x",
    "r.y",
    "img",
    "f",
    "g",
    "out",
    "0",
    "1",
    "2",
    "255",
    "256",
    "-1",
    "1.5",
    "0.0",
    "4294967295",
    "99999999999",
    "0x1F",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    ";",
    ".",
    "..",
    "=",
    "+=",
    "-=",
    "*=",
    "min=",
    "max=",
    "+",
    "-",
    "*",
    "/",
    "%",
    "==",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "|",
    "^",
    "&",
    "<<",
    ">>",
    "||",
    "&&",
    "!",
    "~",
    "\n",
    "\n",
    "\n",
    "#",
    "sum",
    "mean",
    "min",
    "max",
    "convolve",
    "argmax",
    "minimum",
    "select",
    "clamp",
    "abs",
    "sqrt",
    "u8(",
    "sat_u8(",
    "repeat_edge",
    "mirror_image",
    "constant_exterior",
    "img.width",
    "img.extent(0)",
    "split",
    "tile",
    "vectorize",
    "update",
    "compute_at",
    "rfactor",
    "é",
    "\t",
    "*",
    "(-1, *)",
    "(+1, *)",
];

const SEEDS: &[&str] = &[
    include_str!("data/blur.ag"),
    include_str!("data/hist.ag"),
    include_str!("data/unsharp.ag"),
    include_str!("data/syntax.ag"),
];

fn soup(rng: &mut Rng) -> String {
    let len = rng.below(60);
    let mut s = String::new();
    for _ in 0..len {
        s.push_str(VOCABULARY[rng.below(VOCABULARY.len())]);
        if rng.below(3) > 0 {
            s.push(' ');
        }
    }
    s
}

fn mutate(rng: &mut Rng) -> String {
    let seed = SEEDS[rng.below(SEEDS.len())];
    let mut chars: Vec<char> = seed.chars().collect();
    for _ in 0..1 + rng.below(4) {
        if chars.is_empty() {
            break;
        }
        let at = rng.below(chars.len());
        match rng.below(4) {
            0 => {
                let end = (at + rng.below(20)).min(chars.len());
                chars.drain(at..end);
            }
            1 => {
                let word: Vec<char> = VOCABULARY[rng.below(VOCABULARY.len())].chars().collect();
                chars.splice(at..at, word);
            }
            2 => {
                let other = rng.below(chars.len());
                chars.swap(at, other);
            }
            _ => {
                let end = (at + rng.below(30)).min(chars.len());
                let copy: Vec<char> = chars[at..end].to_vec();
                let to = rng.below(chars.len());
                chars.splice(to..to, copy);
            }
        }
    }
    chars.into_iter().collect()
}

#[test]
fn random_programs_never_panic() {
    let cases: usize = std::env::var("ARGENT_STRESS_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut compiled = 0;
    for i in 0..cases {
        let source = if i % 2 == 0 {
            soup(&mut rng)
        } else {
            mutate(&mut rng)
        };
        let (pipeline, diags) = argent_lang::check(&source);
        if pipeline.is_some() {
            compiled += 1;
        } else {
            assert!(
                diags.iter().any(|d| d.is_error()),
                "failed without an error:\n{source}"
            );
        }
        if i % 50 == 0 {
            let rendered = argent_lang::render(&diags, "stress.ag", &source, false);
            assert_eq!(rendered.is_empty(), diags.is_empty());
        }
    }
    // Some mutations keep the program valid; the checker must accept those.
    assert!(compiled > 0);
}
