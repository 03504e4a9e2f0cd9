//! Rendered diagnostics for small bad programs: one snapshot per error
//! kind, exactly as the CLI prints them (without colour).

use expect_test::{Expect, expect};

/// Compiles `source`, which must fail, and compares the rendered errors.
fn check(source: &str, expected: Expect) {
    let (pipeline, diags) = argent_lang::check(source);
    assert!(
        pipeline.is_none() || !diags.is_empty(),
        "expected diagnostics for:\n{source}"
    );
    expected.assert_eq(&argent_lang::render(&diags, "test.ag", source, false));
}

#[test]
fn invalid_character() {
    check(
        "input u8 a(x)\nf(x) = a(x) @ 2\noutput f\n",
        expect![[r#"
            error[E0001]: unexpected character `@`
              ┌─ test.ag:2:13
              │
            2 │ f(x) = a(x) @ 2
              │             ^
              │
              = Argent source uses ASCII operators; comments start with `#`

            error[E0003]: expected end of line, found number `2`
              ┌─ test.ag:2:15
              │
            2 │ f(x) = a(x) @ 2
              │               ^
              │               │
              │               expected end of line here

        "#]],
    );
}

#[test]
fn integer_literal_too_large() {
    check(
        "input u8 a(x)\nf(x) = a(x) + 99999999999\noutput f\n",
        expect![[r#"
            error[E0002]: integer literal too large
              ┌─ test.ag:2:15
              │
            2 │ f(x) = a(x) + 99999999999
              │               ^^^^^^^^^^^
              │
              = integer literals must fit in 32 bits

        "#]],
    );
}

#[test]
fn missing_close_paren() {
    check(
        "input u8 a(x)\nf(x) = (a(x) + 1\noutput f\n",
        expect![[r#"
            error[E0003]: expected `)`, found end of line
              ┌─ test.ag:2:17
              │
            2 │ f(x) = (a(x) + 1
              │        -        ^
              │        │        
              │        │        expected `)` here
              │        unclosed `(` opened here

        "#]],
    );
}

#[test]
fn statement_starts_with_number() {
    check(
        "input u8 a(x)\n3 = 4\nf(x) = a(x)\noutput f\n",
        expect![[r#"
            error[E0003]: expected a statement (input, param, rdom, border, a definition, output or schedule), found number `3`
              ┌─ test.ag:2:1
              │
            2 │ 3 = 4
              │ ^
              │ │
              │ expected a statement (input, param, rdom, border, a definition, output or schedule) here

        "#]],
    );
}

#[test]
fn several_syntax_errors_recovered() {
    check(
        "input u8 a(x\nf(x) = a(x) +\ng(x) = * 2\nh(x) = a(x)\noutput h\n",
        expect![[r#"
            error[E0003]: expected `)` or `,`, found end of line
              ┌─ test.ag:1:13
              │
            1 │ input u8 a(x
              │             ^
              │             
              │             expected `)` or `,` here

            error[E0003]: expected an expression, found end of line
              ┌─ test.ag:2:14
              │
            2 │ f(x) = a(x) +
              │              ^
              │              
              │              expected an expression here

            error[E0003]: expected an expression, found `*`
              ┌─ test.ag:3:8
              │
            3 │ g(x) = * 2
              │        ^
              │        │
              │        expected an expression here

        "#]],
    );
}

#[test]
fn nesting_too_deep() {
    check(
        "input u8 a(x)\nf(x) = ((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((x))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))\noutput f\n",
        expect![[r#"
            error[E0004]: expression nested too deeply
              ┌─ test.ag:2:136
              │
            2 │ f(x) = ((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((x))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))
              │                                                                                                                                        ^
              │
              = at most 128 levels of nesting and 256 levels of operators; split it with named definitions

        "#]],
    );
}

#[test]
fn unknown_name_with_suggestion() {
    check(
        "input u8 a(x, y)\nparam f32 amount = 1.0\nf(x, y) = f32(a(x, y)) * amonut\noutput f\n",
        expect![[r#"
            error[E0101]: unknown name `amonut`
              ┌─ test.ag:3:26
              │
            3 │ f(x, y) = f32(a(x, y)) * amonut
              │                          ^^^^^^
              │
              = did you mean `amount`?

        "#]],
    );
}

#[test]
fn global_let_uses_pure_var() {
    check(
        "input u8 a(x)\nk = x + 1\nf(x) = a(x) + k\noutput f\n",
        expect![[r#"
            error[E0101]: unknown name `x`
              ┌─ test.ag:2:5
              │
            2 │ k = x + 1
              │     ^
              │
              = global lets cannot use pure variables; make it a func, e.g. `k(x, y) = ...`

        "#]],
    );
}

#[test]
fn unknown_function_with_suggestion() {
    check(
        "input u8 a(x)\nf(x) = sqrtt(f32(a(x)))\noutput f\n",
        expect![[r#"
            error[E0102]: unknown function `sqrtt`
              ┌─ test.ag:2:8
              │
            2 │ f(x) = sqrtt(f32(a(x)))
              │        ^^^^^
              │
              = did you mean `sqrt`?

        "#]],
    );
}

#[test]
fn duplicate_definition() {
    check(
        "input u8 a(x)\nparam i32 a = 3\nf(x) = a(x)\noutput f\n",
        expect![[r#"
            error[E0103]: `a` is defined twice
              ┌─ test.ag:2:11
              │
            1 │ input u8 a(x)
              │          - first defined here
            2 │ param i32 a = 3
              │           ^

        "#]],
    );
}

#[test]
fn func_used_without_arguments() {
    check(
        "input u8 a(x)\ng(x) = a(x) * 2\nf(x) = g + 1\noutput f\n",
        expect![[r#"
            error[E0104]: `g` is a func and needs coordinates, e.g. `g(x, y)`
              ┌─ test.ag:3:8
              │
            3 │ f(x) = g + 1
              │        ^

        "#]],
    );
}

#[test]
fn param_called_like_a_func() {
    check(
        "input u8 a(x)\nparam i32 k = 3\nf(x) = a(x) + k(x)\noutput f\n",
        expect![[r#"
            error[E0104]: `k` is a value, not a func; it takes no arguments
              ┌─ test.ag:3:15
              │
            3 │ f(x) = a(x) + k(x)
              │               ^

        "#]],
    );
}

#[test]
fn pure_head_not_a_variable() {
    check(
        "input u8 a(x)\nf(x + 1) = a(x)\noutput f\n",
        expect![[r#"
            error[E0105]: the arguments of a pure definition must be variable names
              ┌─ test.ag:2:3
              │
            2 │ f(x + 1) = a(x)
              │   ^^^^^
              │
              = the first definition of `f` must be pure; give it an initial value, then add update definitions

        "#]],
    );
}

#[test]
fn rdom_in_pure_head() {
    check(
        "input u8 a(x)\nrdom r = [0 .. 10]\nf(r) = a(r)\noutput f\n",
        expect![[r#"
            error[E0105]: `r` is an rdom, not a new pure variable
              ┌─ test.ag:3:3
              │
            3 │ f(r) = a(r)
              │   ^
              │
              = the first definition of `f` must be pure; rdoms go in update definitions

        "#]],
    );
}

#[test]
fn unknown_image_property() {
    check(
        "input u8 a(x, y)\nf(x, y) = a(x, y) + u8(a.depth)\noutput f\n",
        expect![[r#"
            error[E0106]: images have no property `depth`
              ┌─ test.ag:2:24
              │
            2 │ f(x, y) = a(x, y) + u8(a.depth)
              │                        ^^^^^^^
              │
              = the properties are width, height, channels, extent(d) and min(d)

        "#]],
    );
}

#[test]
fn channels_of_two_dimensional_input() {
    check(
        "input u8 a(x, y)\nf(x, y) = a(x, y) * u8(a.channels)\noutput f\n",
        expect![[r#"
            error[E0106]: `a` has 2 dimensions, so it has no dimension 2
              ┌─ test.ag:2:24
              │
            2 │ f(x, y) = a(x, y) * u8(a.channels)
              │                        ^^^^^^^^^^

        "#]],
    );
}

#[test]
fn unknown_output() {
    check(
        "input u8 a(x)\nresult(x) = a(x)\noutput reslt\n",
        expect![[r#"
            error[E0107]: unknown func `reslt` in output
              ┌─ test.ag:3:8
              │
            3 │ output reslt
              │        ^^^^^
              │
              = did you mean `result`?

        "#]],
    );
}

#[test]
fn output_is_an_input() {
    check(
        "input u8 a(x)\nf(x) = a(x)\noutput a\n",
        expect![[r#"
            error[E0107]: `a` is an input, not a func
              ┌─ test.ag:3:8
              │
            3 │ output a
              │        ^
              │
              = an output must be a func; write e.g. `out(x, y) = in(x, y)`

        "#]],
    );
}

#[test]
fn no_output() {
    check(
        "input u8 a(x)\nf(x) = a(x)\n",
        expect![[r#"
            error[E0108]: the pipeline has no output
              ┌─ test.ag:3:1
              │
            3 │ 
              │ ^
              │
              = add a line such as `output result`

        "#]],
    );
}

#[test]
fn first_definition_is_an_update() {
    check(
        "input u8 a(x)\nf(x) += a(x)\noutput f\n",
        expect![[r#"
            error[E0109]: the first definition of `f` must be a pure definition with `=`
              ┌─ test.ag:2:6
              │
            2 │ f(x) += a(x)
              │      ^^
              │
              = give `f` an initial value first, e.g. `f(x) = 0`

        "#]],
    );
}

#[test]
fn unknown_type() {
    check(
        "input u9 a(x)\nf(x) = 1\noutput f\n",
        expect![[r#"
            error[E0110]: unknown type `u9`
              ┌─ test.ag:1:7
              │
            1 │ input u9 a(x)
              │       ^^
              │
              = the types are u8 u16 u32 i8 i16 i32 f32

        "#]],
    );
}

#[test]
fn func_call_wrong_arity() {
    check(
        "input u8 a(x, y)\ng(x, y) = a(x, y)\nf(x, y) = g(x)\noutput f\n",
        expect![[r#"
            error[E0201]: `g` has 2 dimensions, but 1 coordinate was given
              ┌─ test.ag:3:11
              │
            3 │ f(x, y) = g(x)
              │           ^^^^

        "#]],
    );
}

#[test]
fn builtin_wrong_arity() {
    check(
        "input u8 a(x)\nf(x) = clamp(a(x), 0)\noutput f\n",
        expect![[r#"
            error[E0201]: `clamp` takes 3 arguments, but 2 were given
              ┌─ test.ag:2:8
              │
            2 │ f(x) = clamp(a(x), 0)
              │        ^^^^^^^^^^^^^^

        "#]],
    );
}

#[test]
fn input_wrong_arity() {
    check(
        "input u8 a(x, y)\nf(x, y) = a(x, y, 0)\noutput f\n",
        expect![[r#"
            error[E0201]: `a` has 2 dimensions, but 3 coordinates were given
              ┌─ test.ag:2:11
              │
            2 │ f(x, y) = a(x, y, 0)
              │           ^^^^^^^^^^

        "#]],
    );
}

#[test]
fn bool_plus_int() {
    check(
        "input u8 a(x)\nf(x) = (a(x) > 3) + a(x)\noutput f\n",
        expect![[r#"
            error[E0202]: cannot apply `+` to bool and u8
              ┌─ test.ag:2:8
              │
            2 │ f(x) = (a(x) > 3) + a(x)
              │        ^^^^^^^^^^^^^^^^^
              │        │            │
              │        │            this is u8
              │        this is bool
              │
              = bool values come from comparisons; use select(c, 1, 0) to get a number

        "#]],
    );
}

#[test]
fn logical_and_on_integers() {
    check(
        "input u8 a(x)\nf(x) = select(a(x) && 1, 1, 0)\noutput f\n",
        expect![[r#"
            error[E0202]: `&&` needs bool operands, found u8
              ┌─ test.ag:2:15
              │
            2 │ f(x) = select(a(x) && 1, 1, 0)
              │               ^^^^
              │
              = compare with a value first, e.g. `x != 0`

        "#]],
    );
}

#[test]
fn select_condition_not_bool() {
    check(
        "input u8 a(x)\nf(x) = select(a(x), 1, 0)\noutput f\n",
        expect![[r#"
            error[E0203]: the condition of `select` must be bool, found u8
              ┌─ test.ag:2:15
              │
            2 │ f(x) = select(a(x), 1, 0)
              │               ^^^^
              │
              = compare it with something, e.g. `c != 0`

        "#]],
    );
}

#[test]
fn literal_does_not_fit_u8() {
    check(
        "input u8 a(x)\nf(x) = a(x) + 300\noutput f\n",
        expect![[r#"
            error[E0204]: integer literal 300 does not fit in u8
              ┌─ test.ag:2:15
              │
            2 │ f(x) = a(x) + 300
              │               ^^^
              │
              = u8 holds 0 to 255

        "#]],
    );
}

#[test]
fn negative_literal_with_unsigned() {
    check(
        "input u16 a(x)\nf(x) = max(a(x), -1)\noutput f\n",
        expect![[r#"
            error[E0204]: integer literal -1 does not fit in u16
              ┌─ test.ag:2:18
              │
            2 │ f(x) = max(a(x), -1)
              │                  ^^
              │
              = u16 holds 0 to 65535

        "#]],
    );
}

#[test]
fn scatter_index_float() {
    check(
        "input u8 img(x, y)\nrdom r = [0 .. img.width, 0 .. img.height]\nhist(i) = u32(0)\nhist(f32(img(r.x, r.y)) * 0.5) += 1\noutput hist\n",
        expect![[r#"
            error[E0205]: a coordinate of `hist` must be an integer, found f32
              ┌─ test.ag:4:6
              │
            4 │ hist(f32(img(r.x, r.y)) * 0.5) += 1
              │      ^^^^^^^^^^^^^^^^^^^^^^^^
              │
              = convert it with i32(...), after floor/round if needed

        "#]],
    );
}

#[test]
fn float_coordinate() {
    check(
        "input u8 a(x, y)\nf(x, y) = a(x * 0.5, y)\noutput f\n",
        expect![[r#"
            error[E0205]: coordinate 0 of `a` must be an integer, found f32
              ┌─ test.ag:2:13
              │
            2 │ f(x, y) = a(x * 0.5, y)
              │             ^^^^^^^
              │
              = convert it with i32(...), after floor/round if needed

        "#]],
    );
}

#[test]
fn update_value_type_mismatch() {
    check(
        "input u8 a(x)\nrdom r = [0 .. 10]\nf(x) = u8(0)\nf(r) = f32(a(r)) * 0.5\noutput f\n",
        expect![[r#"
            error[E0206]: this update produces f32, but `f` holds u8
              ┌─ test.ag:4:8
              │
            4 │ f(r) = f32(a(r)) * 0.5
              │      - ^^^^^^^^^^^^^^^
              │      │  
              │      `f` was defined as u8 by its pure definition
              │
              = convert the value explicitly, e.g. `u8(...)`

        "#]],
    );
}

#[test]
fn compound_update_widens() {
    check(
        "input u8 a(x)\nrdom r = [0 .. 10]\ns(x) = u8(0)\ns(x) += i32(a(x + r))\noutput s\n",
        expect![[r#"
            error[E0206]: this update produces i32, but `s` holds u8
              ┌─ test.ag:4:9
              │
            4 │ s(x) += i32(a(x + r))
              │      -- ^^^^^^^^^^^^^
              │      │   
              │      `s` was defined as u8 by its pure definition
              │
              = convert the value explicitly, e.g. `u8(...)`

        "#]],
    );
}

#[test]
fn bitwise_on_float() {
    check(
        "input f32 a(x)\nf(x) = a(x) & 255\noutput f\n",
        expect![[r#"
            error[E0207]: `&` needs integer or bool operands, found f32
              ┌─ test.ag:2:8
              │
            2 │ f(x) = a(x) & 255
              │        ^^^^

        "#]],
    );
}

#[test]
fn shift_on_float() {
    check(
        "input f32 a(x)\nf(x) = a(x) << 2\noutput f\n",
        expect![[r#"
            error[E0207]: `<<` needs integer operands, found f32
              ┌─ test.ag:2:8
              │
            2 │ f(x) = a(x) << 2
              │        ^^^^

        "#]],
    );
}

#[test]
fn param_default_not_constant() {
    check(
        "input u8 a(x)\nparam i32 k = a.width\nf(x) = a(x)\noutput f\n",
        expect![[r#"
            error[E0208]: the default value must be a constant
              ┌─ test.ag:2:15
              │
            2 │ param i32 k = a.width
              │               ^^^^^^^
              │
              = use literals and arithmetic on them

        "#]],
    );
}

#[test]
fn kernel_shape_mismatch() {
    check(
        "input u8 a(x, y)\np = repeat_edge(a)\nf(x, y) = convolve(p[x-1 : 3, y-1 : 3], [1, 2, 1; 2, 4])\noutput f\n",
        expect![[r#"
            error[E0209]: the window is 3 wide and 3 high, but the kernel's rows have [3, 2] entries
              ┌─ test.ag:3:41
              │
            3 │ f(x, y) = convolve(p[x-1 : 3, y-1 : 3], [1, 2, 1; 2, 4])
              │                                         ^^^^^^^^^^^^^^^
              │
              = rows are separated by `;` and run along y; entries in a row run along x

        "#]],
    );
}

#[test]
fn kernel_outside_convolve() {
    check(
        "input u8 a(x)\nf(x) = [1, 2, 1]\noutput f\n",
        expect![[r#"
            error[E0209]: a kernel literal is only allowed as the second argument of `convolve`
              ┌─ test.ag:2:8
              │
            2 │ f(x) = [1, 2, 1]
              │        ^^^^^^^^^

        "#]],
    );
}

#[test]
fn recursive_pure_definition() {
    check(
        "input u8 a(x)\nf(x) = f(x - 1) + a(x)\noutput f\n",
        expect![[r#"
            error[E0301]: `f` is defined in terms of itself
              ┌─ test.ag:2:8
              │
            2 │ f(x) = f(x - 1) + a(x)
              │ -      ^^^^^^^^
              │ │       
              │ `f` defined here
              │
              = funcs cannot be defined in a cycle: only an update definition may read its own func (use an rdom for scans)

        "#]],
    );
}

#[test]
fn mutually_recursive_definitions() {
    check(
        "input u8 a(x)\nf(x) = g(x) + 1\ng(x) = f(x - 1)\nout(x) = f(x)\noutput out\n",
        expect![[r#"
            error[E0301]: `f` and `g` are defined in terms of each other
              ┌─ test.ag:2:8
              │
            2 │ f(x) = g(x) + 1
              │ -      ^^^^
              │ │       
              │ `f` defined here
              │
              = funcs cannot be defined in a cycle: only an update definition may read its own func (use an rdom for scans)

            error[E0301]: `g` and `f` are defined in terms of each other
              ┌─ test.ag:3:8
              │
            3 │ g(x) = f(x - 1)
              │ -      ^^^^^^^^
              │ │       
              │ `g` defined here
              │
              = funcs cannot be defined in a cycle: only an update definition may read its own func (use an rdom for scans)

        "#]],
    );
}

#[test]
fn rdom_in_pure_definition() {
    check(
        "input u8 a(x)\nrdom r = [0 .. 3]\nf(x) = a(x + r)\noutput f\n",
        expect![[r#"
            error[E0302]: rdom `r` used outside a reduction
              ┌─ test.ag:3:14
              │
            3 │ f(x) = a(x + r)
              │              ^
              │
              = rdom variables may appear in update definitions or inside sum(...), minimum(...) and the other inline reductions

        "#]],
    );
}

#[test]
fn two_rdoms_in_one_update() {
    check(
        "input u8 a(x)\nrdom r = [0 .. 3]\nrdom s = [0 .. 3]\nf(x) = u8(0)\nf(x) += a(x + r) + a(x + s)\noutput f\n",
        expect![[r#"
            error[E0303]: this uses rdom `s`, but the same reduction already uses `r`
              ┌─ test.ag:5:26
              │
            5 │ f(x) += a(x + r) + a(x + s)
              │                          ^
              │
              = one update or inline reduction iterates over a single rdom; combine them into one multi-dimensional rdom

        "#]],
    );
}

#[test]
fn update_pure_var_moved() {
    check(
        "input u8 a(x, y)\nrdom r = [0 .. 3]\nf(x, y) = u8(0)\nf(y, r) += a(y, r)\noutput f\n",
        expect![[r#"
            error[E0304]: `y` is not the pure variable at position 0 of `f`
              ┌─ test.ag:4:3
              │
            4 │ f(y, r) += a(y, r)
              │   ^
              │
              = `f`'s pure variables are (x, y); an update keeps each in its place

        "#]],
    );
}

#[test]
fn sum_without_rdom() {
    check(
        "input u8 a(x)\nf(x) = sum(a(x))\noutput f\n",
        expect![[r#"
            error[E0305]: `sum` needs an expression that uses an rdom
              ┌─ test.ag:2:8
              │
            2 │ f(x) = sum(a(x))
              │        ^^^^^^^^^
              │
              = e.g. `rdom r = [-1 .. 2]` and `sum(f(x + r))`

        "#]],
    );
}

#[test]
fn argmax_needs_a_dimension() {
    check(
        "input u8 a(x, y)\nrdom r = [0 .. 3, 0 .. 3]\nf(x, y) = argmax(a(x + r.x, y + r.y))\noutput f\n",
        expect![[r#"
            error[E0106]: `argmax` over the 2-dimensional rdom `r` needs a dimension
              ┌─ test.ag:3:11
              │
            3 │ f(x, y) = argmax(a(x + r.x, y + r.y))
              │           ^^^^^^^^^^^^^^^^^^^^^^^^^^^
              │
              = write `argmax(...).x` or `.y`

        "#]],
    );
}

#[test]
fn global_let_calls_func() {
    check(
        "input u8 a(x)\ng(x) = a(x)\nk = g(0)\nf(x) = a(x) + k\noutput f\n",
        expect![[r#"
            error[E0306]: `g` is a func; global lets, rdom bounds and parameters cannot call funcs
              ┌─ test.ag:3:5
              │
            3 │ k = g(0)
              │     ^^^^
              │
              = make the value a func with the coordinates it needs

        "#]],
    );
}

#[test]
fn input_with_five_dimensions() {
    check(
        "input u8 a(x, y, z, w, v)\nf(x) = 1\noutput f\n",
        expect![[r#"
            error[E0307]: an input has 1 to 4 dimensions, `a` has 5
              ┌─ test.ag:1:1
              │
            1 │ input u8 a(x, y, z, w, v)
              │ ^^^^^^^^^^^^^^^^^^^^^^^^^

        "#]],
    );
}

#[test]
fn empty_rdom_range() {
    check(
        "input u8 a(x)\nrdom r = [5 .. 2]\nf(x) = u8(0)\nf(r) = a(r)\noutput f\n",
        expect![[r#"
            error[E0308]: this range is empty (-3 points)
              ┌─ test.ag:2:11
              │
            2 │ rdom r = [5 .. 2]
              │           ^^^^^^
              │
              = rdom ranges are half-open: `min .. end` covers min to end - 1

        "#]],
    );
}

#[test]
fn rdom_dimension_out_of_range() {
    check(
        "input u8 a(x)\nrdom r = [0 .. 3]\nf(x) = u8(0)\nf(x) += a(x + r.y)\noutput f\n",
        expect![[r#"
            error[E0106]: rdom `r` has 1 dimension, so it has no `.y`
              ┌─ test.ag:4:17
              │
            4 │ f(x) += a(x + r.y)
              │                 ^

        "#]],
    );
}

#[test]
fn param_default_outside_range() {
    check(
        "input u8 a(x)\nparam f32 amount = 5.0 in 0.0 .. 4.0\nf(x) = f32(a(x)) * amount\noutput f\n",
        expect![[r#"
            error[E0401]: the default value 5 is outside the range 0 .. 4
              ┌─ test.ag:2:20
              │
            2 │ param f32 amount = 5.0 in 0.0 .. 4.0
              │                    ^^^    ---------- range declared here

        "#]],
    );
}

#[test]
fn integer_param_float_default() {
    check(
        "input u8 a(x)\nparam i32 radius = 1.5 in 1 .. 8\nf(x) = a(x + radius)\noutput f\n",
        expect![[r#"
            error[E0401]: the default value 1.5 is not an integer, but `radius` is i32
              ┌─ test.ag:2:20
              │
            2 │ param i32 radius = 1.5 in 1 .. 8
              │                    ^^^

        "#]],
    );
}

#[test]
fn param_range_reversed() {
    check(
        "input u8 a(x)\nparam i32 radius = 2 in 8 .. 1\nf(x) = a(x + radius)\noutput f\n",
        expect![[r#"
            error[E0402]: empty range: 8 is greater than 1
              ┌─ test.ag:2:25
              │
            2 │ param i32 radius = 2 in 8 .. 1
              │                         ^^^^^^
              │
              = a parameter range `lo .. hi` includes both ends

        "#]],
    );
}

#[test]
fn param_default_does_not_fit() {
    check(
        "input u8 a(x)\nparam u8 level = 300\nf(x) = a(x) + level\noutput f\n",
        expect![[r#"
            error[E0401]: the default value 300 does not fit in u8
              ┌─ test.ag:2:18
              │
            2 │ param u8 level = 300
              │                  ^^^

        "#]],
    );
}

#[test]
fn bool_param() {
    check(
        "input u8 a(x)\nparam bool flag\nf(x) = a(x)\noutput f\n",
        expect![[r#"
            error[E0403]: parameters are numbers; bool parameters are not supported
              ┌─ test.ag:2:7
              │
            2 │ param bool flag
              │       ^^^^
              │
              = use an i32 parameter with range 0 .. 1

        "#]],
    );
}

#[test]
fn boundary_condition_on_func() {
    check(
        "input u8 a(x)\ng(x) = a(x)\np = repeat_edge(g)\nf(x) = p(x)\noutput f\n",
        expect![[r#"
            error[E0501]: `g` is a func; boundary conditions wrap inputs
              ┌─ test.ag:3:17
              │
            3 │ p = repeat_edge(g)
              │                 ^
              │
              = funcs are defined everywhere already; clamp their coordinates with clamp(...) instead

        "#]],
    );
}

#[test]
fn boundary_condition_inside_expression() {
    check(
        "input u8 a(x)\nf(x) = repeat_edge(a)(x)\noutput f\n",
        expect![[r#"
            error[E0506]: a boundary condition defines a func and must stand on its own line
              ┌─ test.ag:2:8
              │
            2 │ f(x) = repeat_edge(a)(x)
              │        ^^^^^^^^^^^^^^
              │
              = write `p = repeat_edge(input)` and then read `p(x, y)`

        "#]],
    );
}

#[test]
fn constant_exterior_value_type() {
    check(
        "input u8 a(x)\np = constant_exterior(a, 1000)\nf(x) = p(x)\noutput f\n",
        expect![[r#"
            error[E0204]: integer literal 1000 does not fit in u8
              ┌─ test.ag:2:26
              │
            2 │ p = constant_exterior(a, 1000)
              │                          ^^^^
              │
              = u8 holds 0 to 255

        "#]],
    );
}

#[test]
fn border_rule_beyond_width() {
    check(
        "input u8 src(x, y)\nborder b = src width 1 {\n  (-2, *) = src(0, *)\n}\nf(x, y) = b(x, y)\noutput f\n",
        expect![[r#"
            error[E0502]: coordinate 0 of this rule is 2 pixels outside, but the declared width is 1
              ┌─ test.ag:3:3
              │
            2 │ border b = src width 1 {
              │                      - width declared here
            3 │   (-2, *) = src(0, *)
              │   ^^^^^^^

        "#]],
    );
}

#[test]
fn border_width_too_small() {
    check(
        "input u8 src(x, y)\nborder b = src width 1 {\n  (-1, *) = src(0, *)\n  (+1, *) = src(src.width - 1, *)\n}\nf(x, y) = b(x - 2, y) + b(x + 1, y)\noutput f\n",
        expect![[r#"
            error[E0503]: the border of `b` is 1 wide in dimension 0, but the pipeline reads 2 pixels before the first index
              ┌─ test.ag:2:22
              │
            2 │ border b = src width 1 {
              │        -------       ^
              │        │              
              │        border rules declared here
              │
              = declare `width 2` or more and add rules for the extra pixels

        "#]],
    );
}

#[test]
fn border_missing_corner_rule() {
    check(
        "input u8 src(x, y)\nborder b = src width 1 {\n  (-1, *) = src(0, *)\n  (*, -1) = src(*, 0)\n}\nf(x, y) = b(x - 1, y - 1)\noutput f\n",
        expect![[r#"
            error[E0504]: the pipeline reads border pixels of `b` that have no rule: (-1, -1)
              ┌─ test.ag:2:8
              │
            2 │ border b = src width 1 {
              │        ^^^^^^^
              │
              = add a rule for each, e.g. corners like `(-1, -1) = src(0, 0)`

        "#]],
    );
}

#[test]
fn border_star_in_wrong_place() {
    check(
        "input u8 src(x, y)\nborder b = src width 1 {\n  (-1, *) = src(*, 0)\n}\nf(x, y) = b(x, y)\noutput f\n",
        expect![[r#"
            error[E0502]: `*` at coordinate 0, but this rule's coordinate 0 is not `*`
              ┌─ test.ag:3:17
              │
            3 │   (-1, *) = src(*, 0)
              │                 ^

        "#]],
    );
}

#[test]
fn border_rule_type() {
    check(
        "input u8 src(x, y)\nborder b = src width 1 {\n  (-1, *) = f32(src(0, *)) * 0.5\n}\nf(x, y) = b(x - 1, y)\noutput f\n",
        expect![[r#"
            error[E0206]: this rule's value has type f32, but `src` is u8
              ┌─ test.ag:3:13
              │
            3 │   (-1, *) = f32(src(0, *)) * 0.5
              │             ^^^^^^^^^^^^^^^^^^^^
              │
              = convert it explicitly, e.g. `u8(...)` or `sat_u8(...)`

        "#]],
    );
}

#[test]
fn star_outside_border_rule() {
    check(
        "input u8 a(x)\nf(x) = a(*)\noutput f\n",
        expect![[r#"
            error[E0507]: `*` is only allowed as a coordinate in border rules
              ┌─ test.ag:2:10
              │
            2 │ f(x) = a(*)
              │          ^

        "#]],
    );
}

#[test]
fn schedule_unknown_func() {
    check(
        "input u8 a(x)\nblur(x) = a(x)\noutput blur\nschedule {\n  blurr.vectorize(x, 8)\n}\n",
        expect![[r#"
            error[E0601]: unknown func `blurr` in schedule
              ┌─ test.ag:5:3
              │
            5 │   blurr.vectorize(x, 8)
              │   ^^^^^
              │
              = did you mean `blur`?

        "#]],
    );
}

#[test]
fn schedule_unknown_directive() {
    check(
        "input u8 a(x)\nf(x) = a(x)\noutput f\nschedule {\n  f.vectorise(x, 8)\n}\n",
        expect![[r#"
            error[E0602]: unknown schedule directive `vectorise`
              ┌─ test.ag:5:5
              │
            5 │   f.vectorise(x, 8)
              │     ^^^^^^^^^
              │
              = did you mean `vectorize`?

        "#]],
    );
}

#[test]
fn schedule_var_gone_after_split() {
    check(
        "input u8 a(x)\nf(x) = a(x)\noutput f\nschedule {\n  f.split(x, xo, xi, 8).vectorize(x)\n}\n",
        expect![[r#"
            error[E0603]: `f` has no loop variable `x`
              ┌─ test.ag:5:35
              │
            5 │   f.split(x, xo, xi, 8).vectorize(x)
              │                                   ^
              │
              = its loops are now: xo, xi

        "#]],
    );
}

#[test]
fn schedule_update_index_out_of_range() {
    check(
        "input u8 a(x)\nrdom r = [0 .. 3]\nf(x) = u8(0)\nf(x) += a(x + r)\noutput f\nschedule {\n  f.update(1).parallel(x)\n}\n",
        expect![[r#"
            error[E0604]: `f` has 1 update definition, so update(1) does not exist
              ┌─ test.ag:7:4
              │
            7 │   f.update(1).parallel(x)
              │    ^^^^^^^^^^
              │
              = valid indices are 0 to 0

        "#]],
    );
}

#[test]
fn schedule_split_name_taken() {
    check(
        "input u8 a(x, y)\nf(x, y) = a(x, y)\noutput f\nschedule {\n  f.split(x, y, xi, 8)\n}\n",
        expect![[r#"
            error[E0605]: `f` already has a loop variable `y`
              ┌─ test.ag:5:14
              │
            5 │   f.split(x, y, xi, 8)
              │              ^
              │
              = the new loops of split, tile and fuse need new names

        "#]],
    );
}

#[test]
fn schedule_wrong_arguments() {
    check(
        "input u8 a(x, y)\nf(x, y) = a(x, y)\noutput f\nschedule {\n  f.tile(x, y, 8)\n}\n",
        expect![[r#"
            error[E0606]: wrong arguments to `tile`
              ┌─ test.ag:5:4
              │
            5 │   f.tile(x, y, 8)
              │    ^^^^^^^^^^^^^^
              │
              = usage: tile(x, y, xi, yi, xf, yf[, tail]) or tile(x, y, xo, yo, xi, yi, xf, yf[, tail])

        "#]],
    );
}

#[test]
fn schedule_bad_tail_strategy() {
    check(
        "input u8 a(x)\nf(x) = a(x)\noutput f\nschedule {\n  f.split(x, xo, xi, 8, round_down)\n}\n",
        expect![[r#"
            error[E0606]: unknown tail strategy `round_down`
              ┌─ test.ag:5:25
              │
            5 │   f.split(x, xo, xi, 8, round_down)
              │                         ^^^^^^^^^^
              │
              = tail strategies: round_up, guard_with_if, shift_inwards, auto

        "#]],
    );
}

#[test]
fn schedule_compute_at_unknown_loop() {
    check(
        "input u8 a(x, y)\ng(x, y) = a(x, y)\nf(x, y) = g(x, y)\noutput f\nschedule {\n  g.compute_at(f, yo)\n}\n",
        expect![[r#"
            error[E0607]: `f` has no loop `yo`
              ┌─ test.ag:6:19
              │
            6 │   g.compute_at(f, yo)
              │                   ^^
              │
              = `f`'s loops are: x, y

        "#]],
    );
}

#[test]
fn schedule_compute_at_non_consumer() {
    check(
        "input u8 a(x, y)\ng(x, y) = a(x, y)\nh(x, y) = a(x, y)\nf(x, y) = g(x, y) + h(x, y)\noutput f\nschedule {\n  g.compute_at(h, y)\n}\n",
        expect![[r#"
            error[E0607]: `h` does not use `g`, so `g` cannot be computed inside it
              ┌─ test.ag:7:16
              │
            7 │   g.compute_at(h, y)
              │                ^
              │
              = compute_at and store_at name a func that (directly or indirectly) reads this one

        "#]],
    );
}

#[test]
fn schedule_rfactor_on_pure_stage() {
    check(
        "input u8 a(x)\nrdom r = [0 .. 3]\nf(x) = u8(0)\nf(x) += a(x + r)\noutput f\nschedule {\n  f.rfactor(r.x, u)\n}\n",
        expect![[r#"
            error[E0608]: `rfactor` applies to an update stage
              ┌─ test.ag:7:5
              │
            7 │   f.rfactor(r.x, u)
              │     ^^^^^^^
              │
              = select one first: `f.update(0).rfactor(...)`

        "#]],
    );
}

#[test]
fn schedule_rfactor_of_a_split_pure_variable() {
    // The pieces of a split reduction variable may be factored (the first
    // line); the pieces of a pure variable are not reduction variables.
    check(
        "input u8 a(x)\nrdom r = [0 .. 8]\nf(x) = u8(0)\nf(x) += a(x + r)\noutput f\nschedule {\n  f.update(0).split(r.x, ro, ri, 4).rfactor(ro, u)\n  f.update(0).split(x, xo, xi, 2).rfactor(xo, v)\n}\n",
        expect![[r#"
            error[E0608]: `xo` is not a reduction variable
              ┌─ test.ag:8:43
              │
            8 │   f.update(0).split(x, xo, xi, 2).rfactor(xo, v)
              │                                           ^^

        "#]],
    );
}

#[test]
fn schedule_specialize_misuse() {
    // A condition that is not bool; directives that cannot differ between
    // versions; a second stage in the same chain.
    check(
        "input u8 a(x)\nparam i32 n = 1\nf(x) = a(x) + u8(n)\ng(x) = f(x)\noutput g\nschedule {\n  g.specialize(n + 1).vectorize(x, 16)\n  f.specialize(n == 1).compute_root()\n  g.specialize(a.width > 64).parallel(x).update(0)\n}\n",
        expect![[r#"
            error[E0610]: the condition of `specialize` must be bool, found i32
              ┌─ test.ag:7:16
              │
            7 │   g.specialize(n + 1).vectorize(x, 16)
              │                ^^^^^
              │
              = e.g. `out.specialize(photo.width >= 64)` or `out.specialize(mode == 1)`

            error[E0610]: `compute_root` cannot differ between specializations
              ┌─ test.ag:8:24
              │
            8 │   f.specialize(n == 1).compute_root()
              │                        ^^^^^^^^^^^^
              │
              = write it before `.specialize(..)`, on `f` itself

            error[E0610]: `update` cannot follow `specialize` in a chain: a specialization is of one stage
              ┌─ test.ag:9:42
              │
            9 │   g.specialize(a.width > 64).parallel(x).update(0)
              │                                          ^^^^^^
              │
              = start a new line for another stage or another specialization

        "#]],
    );
}

#[test]
fn schedule_func_level_on_update() {
    check(
        "input u8 a(x)\nrdom r = [0 .. 3]\nf(x) = u8(0)\nf(x) += a(x + r)\noutput f\nschedule {\n  f.update(0).compute_root()\n}\n",
        expect![[r#"
            error[E0606]: `compute_root` applies to the whole func, not to an update stage
              ┌─ test.ag:7:15
              │
            7 │   f.update(0).compute_root()
              │               ^^^^^^^^^^^^
              │
              = write it before `.update(..)`: `f.compute_root(...)`

        "#]],
    );
}

#[test]
fn two_schedule_blocks() {
    check(
        "input u8 a(x)\nf(x) = a(x)\noutput f\nschedule {\n  f.vectorize(x, 8)\n}\nschedule {\n  f.parallel(x)\n}\n",
        expect![[r#"
            error[E0609]: a pipeline has at most one schedule block
              ┌─ test.ag:7:1
              │
            4 │ schedule {
              │ -------- first schedule here
              ·
            7 │ schedule {
              │ ^^^^^^^^

        "#]],
    );
}

#[test]
fn window_of_unknown_func() {
    check(
        "input u8 a(x)\nf(x) = sum(b[x - 1 : 3])\noutput f\n",
        expect![[r#"
            error[E0701]: unknown func or image `b` in window view
              ┌─ test.ag:2:12
              │
            2 │ f(x) = sum(b[x - 1 : 3])
              │            ^

        "#]],
    );
}

#[test]
fn window_count_zero() {
    check(
        "input u8 a(x)\nf(x) = sum(a[x - 1 : 0])\noutput f\n",
        expect![[r#"
            error[E0702]: a window count must be at least 1, found 0
              ┌─ test.ag:2:22
              │
            2 │ f(x) = sum(a[x - 1 : 0])
              │                      ^

        "#]],
    );
}

#[test]
fn window_count_not_constant() {
    check(
        "input u8 a(x)\nparam i32 n = 3\nf(x) = max(a[x : n])\noutput f\n",
        expect![[r#"
            error[E0702]: a window count must be a constant integer
              ┌─ test.ag:3:18
              │
            3 │ f(x) = max(a[x : n])
              │                  ^
              │
              = windows have a size known at compile time; use an rdom for a variable size

        "#]],
    );
}

#[test]
fn window_arity() {
    check(
        "input u8 a(x, y)\nf(x, y) = mean(a[x - 1 : 3])\noutput f\n",
        expect![[r#"
            error[E0703]: `a` has 2 dimensions, but the window gives 1
              ┌─ test.ag:2:16
              │
            2 │ f(x, y) = mean(a[x - 1 : 3])
              │                ^^^^^^^^^^^^

        "#]],
    );
}

#[test]
fn window_outside_operator() {
    check(
        "input u8 a(x)\nf(x) = a[x - 1 : 3] + 1\noutput f\n",
        expect![[r#"
            error[E0704]: a window view must be the argument of sum, mean, min, max or convolve
              ┌─ test.ag:2:8
              │
            2 │ f(x) = a[x - 1 : 3] + 1
              │        ^^^^^^^^^^^^
              │
              = e.g. `mean(f[x-1 : 3, y-1 : 3])`

        "#]],
    );
}

#[test]
fn min_with_one_argument() {
    check(
        "input u8 a(x)\nf(x) = min(a(x))\noutput f\n",
        expect![[r#"
            error[E0201]: `min` takes at least 2 arguments, but 1 was given
              ┌─ test.ag:2:8
              │
            2 │ f(x) = min(a(x))
              │        ^^^^^^^^^
              │
              = `min` of a window view, e.g. `min(f[x-1:3])`, takes one

        "#]],
    );
}

#[test]
fn abs_of_bool() {
    check(
        "input u8 a(x)\nf(x) = abs(a(x) > 2)\noutput f\n",
        expect![[r#"
            error[E0202]: `abs` needs a number, found bool
              ┌─ test.ag:2:12
              │
            2 │ f(x) = abs(a(x) > 2)
              │            ^^^^^^^^

        "#]],
    );
}

#[test]
fn lerp_with_signed_weight() {
    check(
        "input u8 a(x)\nf(x) = lerp(a(x), a(x + 1), i32(a(x)))\noutput f\n",
        expect![[r#"
            error[E0202]: the weight of `lerp` must be f32 or an unsigned integer, found i32
              ┌─ test.ag:2:29
              │
            2 │ f(x) = lerp(a(x), a(x + 1), i32(a(x)))
              │                             ^^^^^^^^^

        "#]],
    );
}

#[test]
fn reduction_in_global_let() {
    check(
        "input u8 a(x)\nrdom r = [0 .. 3]\nk = sum(a(r))\nf(x) = a(x) + k\noutput f\n",
        expect![[r#"
            error[E0306]: `sum` is not allowed in global lets, rdom bounds, predicates or parameters
              ┌─ test.ag:3:5
              │
            3 │ k = sum(a(r))
              │     ^^^^^^^^^
              │
              = use it inside a func definition

        "#]],
    );
}

#[test]
fn border_width_too_large() {
    check(
        "input u8 src(x, y)\nborder b = src width 100000 {\n  (-1, *) = src(0, *)\n}\nf(x, y) = b(x, y)\noutput f\n",
        expect![[r#"
            error[E0502]: a border width of 100000 is too large; at most 64
              ┌─ test.ag:2:22
              │
            2 │ border b = src width 100000 {
              │                      ^^^^^^

        "#]],
    );
}

#[test]
fn border_footprint_not_provable_is_a_warning() {
    let source = "input u8 src(x, y)\nborder b = src width 1 {\n  (-1, *) = src(0, *)\n}\nf(x, y) = b(x * 2, y)\noutput f\n";
    let (pipeline, diags) = argent_lang::check(source);
    assert!(pipeline.is_some(), "a warning does not fail compilation");
    expect![[r#"
        warning[W0505]: cannot prove that the border of `b` is wide enough: `f` reads it at a coordinate that is not a constant offset
          ┌─ test.ag:2:8
          │
        2 │ border b = src width 1 {
          │        ^^^^^^^
          │
          = the check understands coordinates like `x + 1` and rdom variables with constant bounds; reads beyond the width get the clamped edge value

    "#]].assert_eq(&argent_lang::render(&diags, "test.ag", source, false));
}

#[test]
fn cycle_through_an_update() {
    check(
        "input u8 a(x)\nrdom r = [0 .. 3]\ng(x) = u8(0)\ng(r) = g(r - 1) + h(r)\nh(x) = g(x)\noutput h\n",
        expect![[r#"
            error[E0301]: `g` and `h` are defined in terms of each other
              ┌─ test.ag:4:19
              │
            3 │ g(x) = u8(0)
              │ - `g` defined here
            4 │ g(r) = g(r - 1) + h(r)
              │                   ^^^^
              │
              = funcs cannot be defined in a cycle: only an update definition may read its own func (use an rdom for scans)

            error[E0301]: `h` and `g` are defined in terms of each other
              ┌─ test.ag:5:8
              │
            5 │ h(x) = g(x)
              │ -      ^^^^
              │ │       
              │ `h` defined here
              │
              = funcs cannot be defined in a cycle: only an update definition may read its own func (use an rdom for scans)

        "#]],
    );
}

#[test]
fn unknown_rdom_field() {
    check(
        "input u8 a(x)\nrdom r = [0 .. 3]\nf(x) = u8(0)\nf(x) += a(x + r.q)\noutput f\n",
        expect![[r#"
            error[E0106]: rdom dimensions are named x, y, z, w; found `q`
              ┌─ test.ag:4:17
              │
            4 │ f(x) += a(x + r.q)
              │                 ^

        "#]],
    );
}

#[test]
fn colour_rendering_uses_ansi_escapes() {
    let source = "f(x) = y\noutput f\n";
    let diags = argent_lang::compile(source).unwrap_err();
    let plain = argent_lang::render(&diags.0, "t.ag", source, false);
    let coloured = argent_lang::render(&diags.0, "t.ag", source, true);
    assert!(!plain.contains('\u{1b}'));
    assert!(coloured.contains('\u{1b}'));
}

/// A cross-shaped stencil reads no corners, so it needs no corner rules;
/// a full 3x3 window does.
#[test]
fn cross_stencil_needs_no_corner_rules() {
    let rules = "input u8 src(x, y)\nborder b = src width 1 {\n  (-1, *) = src(0, *)\n  (+1, *) = src(src.width - 1, *)\n  (*, -1) = src(*, 0)\n  (*, +1) = src(*, src.height - 1)\n}\n";
    let cross = format!(
        "{rules}f(x, y) = b(x - 1, y) + b(x + 1, y) + b(x, y - 1) + b(x, y + 1)\noutput f\n"
    );
    assert!(argent_lang::compile(&cross).is_ok());
    let square = format!("{rules}f(x, y) = sum(b[x - 1 : 3, y - 1 : 3])\noutput f\n");
    check(
        &square,
        expect![[r#"
        error[E0504]: the pipeline reads border pixels of `b` that have no rule: (-1, -1), (+1, -1), (-1, +1), (+1, +1)
          ┌─ test.ag:2:8
          │
        2 │ border b = src width 1 {
          │        ^^^^^^^
          │
          = add a rule for each, e.g. corners like `(-1, -1) = src(0, 0)`

    "#]],
    );
}

#[test]
fn reorder_storage_takes_each_pure_variable_once() {
    check(
        "input u8 a(x, y, c)\ng(x, y, c) = a(x, y, c)\nf(x, y, c) = g(x, y, c)\noutput f\nschedule {\n  g.compute_root().reorder_storage(c, x, c)\n  g.reorder_storage(c, xi)\n}\n",
        expect![[r#"
            error[E0606]: `c` appears twice in reorder_storage
              ┌─ test.ag:6:42
              │
            6 │   g.compute_root().reorder_storage(c, x, c)
              │                                          ^

            error[E0603]: `g` has no pure variable `xi`
              ┌─ test.ag:7:24
              │
            7 │   g.reorder_storage(c, xi)
              │                        ^^
              │
              = its pure variables are: x, y, c

        "#]],
    );
}

#[test]
fn rfactor_intermediates_are_scheduled_after_their_rfactor() {
    // `total_intm` exists from the rfactor line on: scheduled before it,
    // it is unknown; after it, its variables are `total`'s and the new
    // one, and the merge left in `total.update(0)` loops over the factored
    // reduction variable, not the new one.
    check(
        "input u8 a(x, y)\nrdom r = [0 .. a.width, 0 .. a.height]\ntotal(i) = f32(0)\ntotal(0) += f32(a(r.x, r.y))\noutput total\nschedule {\n  total_intm.compute_root()\n  total.update(0).rfactor(r.x, u)\n  total_intm.compute_root().reorder_storage(u, i).update(0).reorder(u, r.y).vectorize(u, 8)\n  total.update(0).parallel(u)\n}\n",
        expect![[r#"
            error[E0601]: unknown func `total_intm` in schedule
              ┌─ test.ag:7:3
              │
            7 │   total_intm.compute_root()
              │   ^^^^^^^^^^
              │
              = `total_intm` is made by `rfactor`: schedule it after the line with `total.update(..).rfactor(..)`

            error[E0603]: update 0 of `total` has no loop variable `u`
               ┌─ test.ag:10:28
               │
            10 │   total.update(0).parallel(u)
               │                            ^
               │
               = its loops are now: i, r.x

        "#]],
    );
}
