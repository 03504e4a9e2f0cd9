//! Halide's type rules, table-driven: each row is an expression over
//! inputs of every type and the type (or error code) it must have.

const PRELUDE: &str = "input u8 a8(x)\ninput u16 a16(x)\ninput u32 a32(x)\ninput i8 b8(x)\ninput i16 b16(x)\ninput i32 b32(x)\ninput f32 fl(x)\nparam f32 k = 1.0\n";

fn type_of(expr: &str) -> Result<String, String> {
    let source = format!("{PRELUDE}f(x) = {expr}\noutput f\n");
    match argent_lang::compile(&source) {
        Ok(p) => Ok(p.func("f").expect("f exists").ty.to_string()),
        Err(d) => Err(d.0.iter().map(|d| d.code).collect::<Vec<_>>().join(",")),
    }
}

#[test]
fn type_rules() {
    let table: &[(&str, &str)] = &[
        // Literals take the other operand's type.
        ("a8(x) + 1", "u8"),
        ("1 + a8(x)", "u8"),
        ("a16(x) * 2", "u16"),
        ("b8(x) - 1", "i8"),
        ("1", "i32"),
        ("1.5", "f32"),
        ("2 * 3 + 1", "i32"),
        ("a8(x) + 2 * 200", "E0204"),
        ("a8(x) + 255", "u8"),
        ("a8(x) + 256", "E0204"),
        ("b8(x) + -128", "i8"),
        ("a8(x) + -1", "E0204"),
        // Float literal with an integer operand: f32.
        ("a8(x) + 0.5", "f32"),
        ("b32(x) * 1.5", "f32"),
        ("1 + 1.5", "f32"),
        // Same signedness: the wider type.
        ("a8(x) + a16(x)", "u16"),
        ("a16(x) + a32(x)", "u32"),
        ("b8(x) + b16(x)", "i16"),
        ("b16(x) + b32(x)", "i32"),
        // Mixed signedness: the signed type of the wider width.
        ("a8(x) + b8(x)", "i8"),
        ("a16(x) + b8(x)", "i16"),
        ("a8(x) + b16(x)", "i16"),
        ("a32(x) + b8(x)", "i32"),
        // Integer with float: float.
        ("a8(x) * fl(x)", "f32"),
        ("b32(x) - k", "f32"),
        // Comparisons and logic give bool.
        ("a8(x) < 3", "bool"),
        ("a8(x) < b16(x)", "bool"),
        ("a8(x) < 3 && fl(x) > 0.5", "bool"),
        ("!(a8(x) == 3)", "bool"),
        ("a8(x) && 1", "E0202"),
        ("(a8(x) < 3) + 1", "E0202"),
        // Bitwise and shifts need integers.
        ("a8(x) & 15", "u8"),
        ("a16(x) | a8(x)", "u16"),
        ("a8(x) << 2", "u8"),
        ("a16(x) >> a8(x)", "u16"),
        ("~b8(x)", "i8"),
        ("fl(x) & 1", "E0207"),
        ("~fl(x)", "E0207"),
        // Casts.
        ("u8(fl(x))", "u8"),
        ("sat_u8(b32(x))", "u8"),
        ("f32(a8(x))", "f32"),
        ("i16(a8(x) > 2)", "i16"),
        ("u8(300)", "u8"),
        // Builtins.
        ("abs(b8(x))", "u8"),
        ("abs(b32(x))", "u32"),
        ("abs(a16(x))", "u16"),
        ("abs(fl(x))", "f32"),
        ("absd(b16(x), b16(x))", "u16"),
        ("absd(a8(x), 3)", "u8"),
        ("select(a8(x) > 3, a8(x), 0)", "u8"),
        ("select(a8(x) > 3, a8(x), b16(x))", "i16"),
        ("select(a8(x), 1, 0)", "E0203"),
        ("clamp(b32(x), 0, 255)", "i32"),
        ("clamp(fl(x), 0, 1)", "f32"),
        ("min(a8(x), a16(x))", "u16"),
        ("max(a8(x), 3, b8(x))", "i8"),
        ("min(a8(x))", "E0201"),
        ("lerp(a8(x), a8(x), a8(x))", "u8"),
        ("lerp(fl(x), 1.0, 0.5)", "f32"),
        ("lerp(a8(x), a8(x), b8(x))", "E0202"),
        ("sqrt(a8(x))", "f32"),
        ("pow(fl(x), 2)", "f32"),
        ("atan2(b32(x), 1)", "f32"),
        ("floor(fl(x))", "f32"),
        ("is_nan(fl(x))", "bool"),
        ("exp(a8(x) > 1)", "E0202"),
        // Division and modulo keep the operand type.
        ("a8(x) / 3", "u8"),
        ("b16(x) % 7", "i16"),
        ("fl(x) / 2", "f32"),
        // Let keeps literal-ness.
        ("let t = 2 in a8(x) * t", "u8"),
        ("let t = a8(x) in t + t", "u8"),
    ];
    let mut failures = Vec::new();
    for (expr, want) in table {
        let got = match type_of(expr) {
            Ok(t) => t,
            Err(codes) => codes,
        };
        if got != *want {
            failures.push(format!("{expr}: expected {want}, got {got}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Constant folding of literals follows the language's integer semantics
/// (Euclidean division and modulo, x/0 == 0).
#[test]
fn literal_folding_is_euclidean() {
    let cases = [
        ("-7 / 2", -4),
        ("-7 % 2", 1),
        ("7 / -2", -3),
        ("7 % -2", 1),
        ("5 / 0", 0),
        ("5 % 0", 0),
    ];
    for (expr, want) in cases {
        let p = argent_lang::compile(&format!("f(x) = {expr}\noutput f\n")).expect("compiles");
        assert_eq!(p.func("f").expect("f").value.as_int(), Some(want), "{expr}");
    }
}
