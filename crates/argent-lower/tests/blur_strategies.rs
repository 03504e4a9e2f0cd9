//! The five blur strategies of the Halide paper, section 3.1, as snapshots
//! of the lowered loop nest.

mod common;

use argent_lower::{LowerOptions, lower};
use expect_test::{Expect, expect};

fn check(schedule: &str, expected: Expect) {
    let p = common::with_schedule(common::blur(), schedule);
    let lowered = lower(&p, &LowerOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    expected.assert_eq(&format!("{}\n{}", lowered.schedule_tree, lowered.loop_nest));
}

#[test]
fn breadth_first() {
    check(
        "blur_x.compute_root()",
        expect![[r#"
            domain { blur_x.s0[y, x], blur_y.s0[y, x] }
              sequence
                filter blur_x.s0
                  band [y, x] permutable coincident [1, 1]
                filter blur_y.s0
                  band [y, x] permutable coincident [1, 1]

            let blur_y.s0.x.min = blur_y.min.0
            let blur_y.s0.x.max = ((blur_y.extent.0 + blur_y.min.0) - 1)
            let blur_y.s0.y.min = blur_y.min.1
            let blur_y.s0.y.max = ((blur_y.extent.1 + blur_y.min.1) - 1)
            let blur_x.s0.x.min = blur_y.s0.x.min
            let blur_x.s0.x.max = blur_y.s0.x.max
            let blur_x.s0.y.min = (blur_y.s0.y.min - 1)
            let blur_x.s0.y.max = (blur_y.s0.y.max + 1)
            assert((((blur_x.s0.x.min - 1) >= in.min.0) && ((blur_x.s0.x.max + 1) <= ((in.extent.0 + in.min.0) - 1))), InputTooSmall { input: "in", stage: "blur_x", dim: 0 }, [(blur_x.s0.x.min - 1), (blur_x.s0.x.max + 1), in.min.0, ((in.extent.0 + in.min.0) - 1)])
            assert(((blur_x.s0.y.min >= in.min.1) && (blur_x.s0.y.max <= ((in.extent.1 + in.min.1) - 1))), InputTooSmall { input: "in", stage: "blur_x", dim: 1 }, [blur_x.s0.y.min, blur_x.s0.y.max, in.min.1, ((in.extent.1 + in.min.1) - 1)])
            assert(((blur_y.s0.x.min >= blur_y.min.0) && (blur_y.s0.x.max <= ((blur_y.extent.0 + blur_y.min.0) - 1))), OutputTooSmall { output: "blur_y", dim: 0 }, [blur_y.s0.x.min, blur_y.s0.x.max, blur_y.min.0, ((blur_y.extent.0 + blur_y.min.0) - 1)])
            assert(((blur_y.s0.y.min >= blur_y.min.1) && (blur_y.s0.y.max <= ((blur_y.extent.1 + blur_y.min.1) - 1))), OutputTooSmall { output: "blur_y", dim: 1 }, [blur_y.s0.y.min, blur_y.s0.y.max, blur_y.min.1, ((blur_y.extent.1 + blur_y.min.1) - 1)])
            realize blur_x: u16([blur_x.s0.x.min, max(((blur_x.s0.x.max - blur_x.s0.x.min) + 1), 0)], [blur_x.s0.y.min, max(((blur_x.s0.y.max - blur_x.s0.y.min) + 1), 0)]) {
              produce blur_x {
                for (blur_x.s0.y, blur_x.s0.y.min, ((blur_x.s0.y.max - blur_x.s0.y.min) + 1)) {
                  for (blur_x.s0.x, blur_x.s0.x.min, ((blur_x.s0.x.max - blur_x.s0.x.min) + 1)) {
                    blur_x(blur_x.s0.x, blur_x.s0.y) = (((in((blur_x.s0.x + -1), (blur_x.s0.y + 0)) + in((blur_x.s0.x + 0), (blur_x.s0.y + 0))) + in((blur_x.s0.x + 1), (blur_x.s0.y + 0))) / u16(3))
                  }
                }
              }
              consume blur_x {
                produce blur_y {
                  for (blur_y.s0.y, blur_y.s0.y.min, ((blur_y.s0.y.max - blur_y.s0.y.min) + 1)) {
                    for (blur_y.s0.x, blur_y.s0.x.min, ((blur_y.s0.x.max - blur_y.s0.x.min) + 1)) {
                      blur_y(blur_y.s0.x, blur_y.s0.y) = (((blur_x((blur_y.s0.x + 0), (blur_y.s0.y + -1)) + blur_x((blur_y.s0.x + 0), (blur_y.s0.y + 0))) + blur_x((blur_y.s0.x + 0), (blur_y.s0.y + 1))) / u16(3))
                    }
                  }
                }
              }
            }
        "#]],
    );
}

#[test]
fn full_fusion_inline() {
    check(
        "",
        expect![[r#"
        domain { blur_y.s0[y, x] }
          filter blur_y.s0
            expansion { blur_x.s0 }
              band [y, x] permutable coincident [1, 1]

        let blur_y.s0.x.min = blur_y.min.0
        let blur_y.s0.x.max = ((blur_y.extent.0 + blur_y.min.0) - 1)
        let blur_y.s0.y.min = blur_y.min.1
        let blur_y.s0.y.max = ((blur_y.extent.1 + blur_y.min.1) - 1)
        assert((((blur_y.s0.x.min - 1) >= in.min.0) && ((blur_y.s0.x.max + 1) <= ((in.extent.0 + in.min.0) - 1))), InputTooSmall { input: "in", stage: "blur_y", dim: 0 }, [(blur_y.s0.x.min - 1), (blur_y.s0.x.max + 1), in.min.0, ((in.extent.0 + in.min.0) - 1)])
        assert((((blur_y.s0.y.min - 1) >= in.min.1) && ((blur_y.s0.y.max + 1) <= ((in.extent.1 + in.min.1) - 1))), InputTooSmall { input: "in", stage: "blur_y", dim: 1 }, [(blur_y.s0.y.min - 1), (blur_y.s0.y.max + 1), in.min.1, ((in.extent.1 + in.min.1) - 1)])
        assert(((blur_y.s0.x.min >= blur_y.min.0) && (blur_y.s0.x.max <= ((blur_y.extent.0 + blur_y.min.0) - 1))), OutputTooSmall { output: "blur_y", dim: 0 }, [blur_y.s0.x.min, blur_y.s0.x.max, blur_y.min.0, ((blur_y.extent.0 + blur_y.min.0) - 1)])
        assert(((blur_y.s0.y.min >= blur_y.min.1) && (blur_y.s0.y.max <= ((blur_y.extent.1 + blur_y.min.1) - 1))), OutputTooSmall { output: "blur_y", dim: 1 }, [blur_y.s0.y.min, blur_y.s0.y.max, blur_y.min.1, ((blur_y.extent.1 + blur_y.min.1) - 1)])
        produce blur_y {
          for (blur_y.s0.y, blur_y.s0.y.min, ((blur_y.s0.y.max - blur_y.s0.y.min) + 1)) {
            for (blur_y.s0.x, blur_y.s0.x.min, ((blur_y.s0.x.max - blur_y.s0.x.min) + 1)) {
              blur_y(blur_y.s0.x, blur_y.s0.y) = ((((let blur_x.x.1 = (blur_y.s0.x + 0) in (let blur_x.y.2 = (blur_y.s0.y + -1) in (((in((blur_x.x.1 + -1), (blur_x.y.2 + 0)) + in((blur_x.x.1 + 0), (blur_x.y.2 + 0))) + in((blur_x.x.1 + 1), (blur_x.y.2 + 0))) / u16(3)))) + (let blur_x.x.3 = (blur_y.s0.x + 0) in (let blur_x.y.4 = (blur_y.s0.y + 0) in (((in((blur_x.x.3 + -1), (blur_x.y.4 + 0)) + in((blur_x.x.3 + 0), (blur_x.y.4 + 0))) + in((blur_x.x.3 + 1), (blur_x.y.4 + 0))) / u16(3))))) + (let blur_x.x.5 = (blur_y.s0.x + 0) in (let blur_x.y.6 = (blur_y.s0.y + 1) in (((in((blur_x.x.5 + -1), (blur_x.y.6 + 0)) + in((blur_x.x.5 + 0), (blur_x.y.6 + 0))) + in((blur_x.x.5 + 1), (blur_x.y.6 + 0))) / u16(3))))) / u16(3))
            }
          }
        }
    "#]],
    );
}

#[test]
fn full_fusion_compute_at_innermost() {
    check(
        "blur_x.compute_at(blur_y, x)",
        expect![[r#"
        domain { blur_x.s0[y, x], blur_y.s0[y, x] }
          filter blur_y.s0
            band [y, x] permutable coincident [1, 1]
              filter blur_x.s0
                band [y, x] permutable coincident [1, 1]
        # blur_x: compute at blur_y.s0.x, store at blur_y.s0.x

        let blur_y.s0.x.min = blur_y.min.0
        let blur_y.s0.x.max = ((blur_y.extent.0 + blur_y.min.0) - 1)
        let blur_y.s0.y.min = blur_y.min.1
        let blur_y.s0.y.max = ((blur_y.extent.1 + blur_y.min.1) - 1)
        assert((((blur_y.s0.x.min - 1) >= in.min.0) && ((blur_y.s0.x.max + 1) <= ((in.extent.0 + in.min.0) - 1))), InputTooSmall { input: "in", stage: "blur_x", dim: 0 }, [(blur_y.s0.x.min - 1), (blur_y.s0.x.max + 1), in.min.0, ((in.extent.0 + in.min.0) - 1)])
        assert((((blur_y.s0.y.min - 1) >= in.min.1) && ((blur_y.s0.y.max + 1) <= ((in.extent.1 + in.min.1) - 1))), InputTooSmall { input: "in", stage: "blur_x", dim: 1 }, [(blur_y.s0.y.min - 1), (blur_y.s0.y.max + 1), in.min.1, ((in.extent.1 + in.min.1) - 1)])
        assert(((blur_y.s0.x.min >= blur_y.min.0) && (blur_y.s0.x.max <= ((blur_y.extent.0 + blur_y.min.0) - 1))), OutputTooSmall { output: "blur_y", dim: 0 }, [blur_y.s0.x.min, blur_y.s0.x.max, blur_y.min.0, ((blur_y.extent.0 + blur_y.min.0) - 1)])
        assert(((blur_y.s0.y.min >= blur_y.min.1) && (blur_y.s0.y.max <= ((blur_y.extent.1 + blur_y.min.1) - 1))), OutputTooSmall { output: "blur_y", dim: 1 }, [blur_y.s0.y.min, blur_y.s0.y.max, blur_y.min.1, ((blur_y.extent.1 + blur_y.min.1) - 1)])
        produce blur_y {
          for (blur_y.s0.y, blur_y.s0.y.min, ((blur_y.s0.y.max - blur_y.s0.y.min) + 1)) {
            for (blur_y.s0.x, blur_y.s0.x.min, ((blur_y.s0.x.max - blur_y.s0.x.min) + 1)) {
              realize blur_x: u16([blur_y.s0.x, 1], [(blur_y.s0.y - 1), 3]) {
                let blur_x.s0.x.min = blur_y.s0.x
                let blur_x.s0.x.max = blur_y.s0.x
                let blur_x.s0.y.min = (blur_y.s0.y - 1)
                let blur_x.s0.y.max = (blur_y.s0.y + 1)
                produce blur_x {
                  for (blur_x.s0.y, blur_x.s0.y.min, ((blur_x.s0.y.max - blur_x.s0.y.min) + 1)) {
                    for (blur_x.s0.x, blur_x.s0.x.min, ((blur_x.s0.x.max - blur_x.s0.x.min) + 1)) {
                      blur_x(blur_x.s0.x, blur_x.s0.y) = (((in((blur_x.s0.x + -1), (blur_x.s0.y + 0)) + in((blur_x.s0.x + 0), (blur_x.s0.y + 0))) + in((blur_x.s0.x + 1), (blur_x.s0.y + 0))) / u16(3))
                    }
                  }
                }
                consume blur_x {
                  blur_y(blur_y.s0.x, blur_y.s0.y) = (((blur_x((blur_y.s0.x + 0), (blur_y.s0.y + -1)) + blur_x((blur_y.s0.x + 0), (blur_y.s0.y + 0))) + blur_x((blur_y.s0.x + 0), (blur_y.s0.y + 1))) / u16(3))
                }
              }
            }
          }
        }
    "#]],
    );
}

#[test]
fn sliding_window() {
    check(
        "blur_x.store_root().compute_at(blur_y, y)",
        expect![[r#"
            domain { blur_x.s0[y, x], blur_y.s0[y, x] }
              filter blur_y.s0
                band [y] permutable coincident [1]
                  sequence
                    filter blur_x.s0
                      band [y, x] permutable coincident [1, 1]
                    band [x] permutable coincident [1]
            # blur_x: compute at blur_y.s0.y, store at root

            let blur_y.s0.x.min = blur_y.min.0
            let blur_y.s0.x.max = ((blur_y.extent.0 + blur_y.min.0) - 1)
            let blur_y.s0.y.min = blur_y.min.1
            let blur_y.s0.y.max = ((blur_y.extent.1 + blur_y.min.1) - 1)
            assert((((blur_y.s0.x.min - 1) >= in.min.0) && ((blur_y.s0.x.max + 1) <= ((in.extent.0 + in.min.0) - 1))), InputTooSmall { input: "in", stage: "blur_x", dim: 0 }, [(blur_y.s0.x.min - 1), (blur_y.s0.x.max + 1), in.min.0, ((in.extent.0 + in.min.0) - 1)])
            assert((((blur_y.s0.y.min - 1) >= in.min.1) && ((blur_y.s0.y.max + 1) <= ((in.extent.1 + in.min.1) - 1))), InputTooSmall { input: "in", stage: "blur_x", dim: 1 }, [(blur_y.s0.y.min - 1), (blur_y.s0.y.max + 1), in.min.1, ((in.extent.1 + in.min.1) - 1)])
            assert(((blur_y.s0.x.min >= blur_y.min.0) && (blur_y.s0.x.max <= ((blur_y.extent.0 + blur_y.min.0) - 1))), OutputTooSmall { output: "blur_y", dim: 0 }, [blur_y.s0.x.min, blur_y.s0.x.max, blur_y.min.0, ((blur_y.extent.0 + blur_y.min.0) - 1)])
            assert(((blur_y.s0.y.min >= blur_y.min.1) && (blur_y.s0.y.max <= ((blur_y.extent.1 + blur_y.min.1) - 1))), OutputTooSmall { output: "blur_y", dim: 1 }, [blur_y.s0.y.min, blur_y.s0.y.max, blur_y.min.1, ((blur_y.extent.1 + blur_y.min.1) - 1)])
            realize blur_x: u16([blur_y.s0.x.min, max(((blur_y.s0.x.max - blur_y.s0.x.min) + 1), 0)], [0, 4]) {
              produce blur_y {
                for (blur_y.s0.y, blur_y.s0.y.min, ((blur_y.s0.y.max - blur_y.s0.y.min) + 1)) {
                  let blur_x.s0.x.min = blur_y.s0.x.min
                  let blur_x.s0.x.max = blur_y.s0.x.max
                  let blur_x.s0.y.min = select((blur_y.s0.y > blur_y.s0.y.min), (blur_y.s0.y + 1), (blur_y.s0.y - 1))
                  let blur_x.s0.y.max = (blur_y.s0.y + 1)
                  produce blur_x {
                    for (blur_x.s0.y, blur_x.s0.y.min, ((blur_x.s0.y.max - blur_x.s0.y.min) + 1)) {
                      for (blur_x.s0.x, blur_x.s0.x.min, ((blur_x.s0.x.max - blur_x.s0.x.min) + 1)) {
                        blur_x(blur_x.s0.x, (blur_x.s0.y % 4)) = (((in((blur_x.s0.x + -1), (blur_x.s0.y + 0)) + in((blur_x.s0.x + 0), (blur_x.s0.y + 0))) + in((blur_x.s0.x + 1), (blur_x.s0.y + 0))) / u16(3))
                      }
                    }
                  }
                  consume blur_x {
                    for (blur_y.s0.x, blur_y.s0.x.min, ((blur_y.s0.x.max - blur_y.s0.x.min) + 1)) {
                      blur_y(blur_y.s0.x, blur_y.s0.y) = (((blur_x((blur_y.s0.x + 0), ((blur_y.s0.y + -1) % 4)) + blur_x((blur_y.s0.x + 0), ((blur_y.s0.y + 0) % 4))) + blur_x((blur_y.s0.x + 0), ((blur_y.s0.y + 1) % 4))) / u16(3))
                    }
                  }
                }
              }
            }
        "#]],
    );
}

#[test]
fn overlapping_tiles() {
    check(
        "blur_y.tile(x, y, xo, yo, xi, yi, 8, 8).parallel(yo)\nblur_x.compute_at(blur_y, xo)",
        expect![[r#"
            domain { blur_x.s0[y, x], blur_y.s0[y.yo, x.xo, y.yi, x.xi] }
              filter blur_y.s0
                mark parallel
                  band [y.yo] permutable coincident [1]
                    band [x.xo] permutable coincident [1]
                      sequence
                        filter blur_x.s0
                          band [y, x] permutable coincident [1, 1]
                        band [y.yi, x.xi] permutable coincident [1, 1]
            # blur_x: compute at blur_y.s0.x.xo, store at blur_y.s0.x.xo

            let blur_y.s0.x.min = blur_y.min.0
            let blur_y.s0.x.max = ((blur_y.extent.0 + blur_y.min.0) - 1)
            let blur_y.s0.y.min = blur_y.min.1
            let blur_y.s0.y.max = ((blur_y.extent.1 + blur_y.min.1) - 1)
            let blur_x.s0.y.max.checked_hi.1 = (min(min(max(min(((blur_y.s0.y.min + ((((blur_y.s0.y.max - blur_y.s0.y.min) + 8) / 8) * 8)) - 1), blur_y.s0.y.max), blur_y.s0.y.min), ((((((blur_y.s0.y.max - blur_y.s0.y.min) + 8) / 8) * 8) + max(min((blur_y.s0.y.min + 7), blur_y.s0.y.max), blur_y.s0.y.min)) - 8)), (min(max(min(((blur_y.s0.y.min + ((((blur_y.s0.y.max - blur_y.s0.y.min) + 8) / 8) * 8)) - 8), blur_y.s0.y.max), blur_y.s0.y.min), ((blur_y.s0.y.min + ((((blur_y.s0.y.max - blur_y.s0.y.min) + 8) / 8) * 8)) - 8)) + 7)) + 1)
            let blur_x.s0.x.max.checked_hi.2 = min(min(max(min(((blur_y.s0.x.min + ((((blur_y.s0.x.max - blur_y.s0.x.min) + 8) / 8) * 8)) - 1), blur_y.s0.x.max), blur_y.s0.x.min), ((((((blur_y.s0.x.max - blur_y.s0.x.min) + 8) / 8) * 8) + max(min((blur_y.s0.x.min + 7), blur_y.s0.x.max), blur_y.s0.x.min)) - 8)), (min(max(min(((blur_y.s0.x.min + ((((blur_y.s0.x.max - blur_y.s0.x.min) + 8) / 8) * 8)) - 8), blur_y.s0.x.max), blur_y.s0.x.min), ((blur_y.s0.x.min + ((((blur_y.s0.x.max - blur_y.s0.x.min) + 8) / 8) * 8)) - 8)) + 7))
            assert((((blur_y.s0.x.min - 1) >= in.min.0) && ((blur_x.s0.x.max.checked_hi.2 + 1) <= ((in.extent.0 + in.min.0) - 1))), InputTooSmall { input: "in", stage: "blur_x", dim: 0 }, [(blur_y.s0.x.min - 1), (blur_x.s0.x.max.checked_hi.2 + 1), in.min.0, ((in.extent.0 + in.min.0) - 1)])
            assert((((blur_y.s0.y.min - 1) >= in.min.1) && (blur_x.s0.y.max.checked_hi.1 <= ((in.extent.1 + in.min.1) - 1))), InputTooSmall { input: "in", stage: "blur_x", dim: 1 }, [(blur_y.s0.y.min - 1), blur_x.s0.y.max.checked_hi.1, in.min.1, ((in.extent.1 + in.min.1) - 1)])
            assert(((blur_y.s0.x.min >= blur_y.min.0) && (min(max(min(((blur_y.s0.x.min + ((((blur_y.s0.x.max - blur_y.s0.x.min) + 8) / 8) * 8)) - 1), blur_y.s0.x.max), blur_y.s0.x.min), ((blur_y.s0.x.min + ((((blur_y.s0.x.max - blur_y.s0.x.min) + 8) / 8) * 8)) - 1)) <= ((blur_y.extent.0 + blur_y.min.0) - 1))), OutputTooSmall { output: "blur_y", dim: 0 }, [blur_y.s0.x.min, min(max(min(((blur_y.s0.x.min + ((((blur_y.s0.x.max - blur_y.s0.x.min) + 8) / 8) * 8)) - 1), blur_y.s0.x.max), blur_y.s0.x.min), ((blur_y.s0.x.min + ((((blur_y.s0.x.max - blur_y.s0.x.min) + 8) / 8) * 8)) - 1)), blur_y.min.0, ((blur_y.extent.0 + blur_y.min.0) - 1)])
            assert(((blur_y.s0.y.min >= blur_y.min.1) && (min(max(min(((blur_y.s0.y.min + ((((blur_y.s0.y.max - blur_y.s0.y.min) + 8) / 8) * 8)) - 1), blur_y.s0.y.max), blur_y.s0.y.min), ((blur_y.s0.y.min + ((((blur_y.s0.y.max - blur_y.s0.y.min) + 8) / 8) * 8)) - 1)) <= ((blur_y.extent.1 + blur_y.min.1) - 1))), OutputTooSmall { output: "blur_y", dim: 1 }, [blur_y.s0.y.min, min(max(min(((blur_y.s0.y.min + ((((blur_y.s0.y.max - blur_y.s0.y.min) + 8) / 8) * 8)) - 1), blur_y.s0.y.max), blur_y.s0.y.min), ((blur_y.s0.y.min + ((((blur_y.s0.y.max - blur_y.s0.y.min) + 8) / 8) * 8)) - 1)), blur_y.min.1, ((blur_y.extent.1 + blur_y.min.1) - 1)])
            produce blur_y {
              parallel (blur_y.s0.y.yo, 0, (((blur_y.s0.y.max - blur_y.s0.y.min) + 8) / 8)) {
                for (blur_y.s0.x.xo, 0, (((blur_y.s0.x.max - blur_y.s0.x.min) + 8) / 8)) {
                  realize blur_x: u16([max(min((blur_y.s0.x.min + (blur_y.s0.x.xo * 8)), blur_y.s0.x.max), blur_y.s0.x.min), max(((min(max(min(((blur_y.s0.x.min + (blur_y.s0.x.xo * 8)) + 7), blur_y.s0.x.max), blur_y.s0.x.min), (max(min((blur_y.s0.x.min + (blur_y.s0.x.xo * 8)), blur_y.s0.x.max), blur_y.s0.x.min) + 7)) - max(min((blur_y.s0.x.min + (blur_y.s0.x.xo * 8)), blur_y.s0.x.max), blur_y.s0.x.min)) + 1), 0)], [(max(min((blur_y.s0.y.min + (blur_y.s0.y.yo * 8)), blur_y.s0.y.max), blur_y.s0.y.min) - 1), max(((min(max(min(((blur_y.s0.y.min + (blur_y.s0.y.yo * 8)) + 7), blur_y.s0.y.max), blur_y.s0.y.min), (max(min((blur_y.s0.y.min + (blur_y.s0.y.yo * 8)), blur_y.s0.y.max), blur_y.s0.y.min) + 7)) - max(min((blur_y.s0.y.min + (blur_y.s0.y.yo * 8)), blur_y.s0.y.max), blur_y.s0.y.min)) + 3), 0)]) {
                    let blur_x.s0.x.min = max(min((blur_y.s0.x.min + (blur_y.s0.x.xo * 8)), blur_y.s0.x.max), blur_y.s0.x.min)
                    let blur_x.s0.x.max = min(max(min(((blur_y.s0.x.min + (blur_y.s0.x.xo * 8)) + 7), blur_y.s0.x.max), blur_y.s0.x.min), (max(min((blur_y.s0.x.min + (blur_y.s0.x.xo * 8)), blur_y.s0.x.max), blur_y.s0.x.min) + 7))
                    let blur_x.s0.y.min = (max(min((blur_y.s0.y.min + (blur_y.s0.y.yo * 8)), blur_y.s0.y.max), blur_y.s0.y.min) - 1)
                    let blur_x.s0.y.max = (min(max(min(((blur_y.s0.y.min + (blur_y.s0.y.yo * 8)) + 7), blur_y.s0.y.max), blur_y.s0.y.min), (max(min((blur_y.s0.y.min + (blur_y.s0.y.yo * 8)), blur_y.s0.y.max), blur_y.s0.y.min) + 7)) + 1)
                    produce blur_x {
                      for (blur_x.s0.y, blur_x.s0.y.min, ((blur_x.s0.y.max - blur_x.s0.y.min) + 1)) {
                        for (blur_x.s0.x, blur_x.s0.x.min, ((blur_x.s0.x.max - blur_x.s0.x.min) + 1)) {
                          blur_x(blur_x.s0.x, blur_x.s0.y) = (((in((blur_x.s0.x + -1), (blur_x.s0.y + 0)) + in((blur_x.s0.x + 0), (blur_x.s0.y + 0))) + in((blur_x.s0.x + 1), (blur_x.s0.y + 0))) / u16(3))
                        }
                      }
                    }
                    consume blur_x {
                      for (blur_y.s0.y.yi, 0, 8) {
                        for (blur_y.s0.x.xi, 0, 8) {
                          let blur_y.s0.y = max(min((((blur_y.s0.y.yo * 8) + blur_y.s0.y.yi) + blur_y.s0.y.min), blur_y.s0.y.max), blur_y.s0.y.min)
                          let blur_y.s0.x = max(min((((blur_y.s0.x.xo * 8) + blur_y.s0.x.xi) + blur_y.s0.x.min), blur_y.s0.x.max), blur_y.s0.x.min)
                          if (likely((((blur_y.s0.x.xi + (blur_y.s0.x.xo * 8)) < ((blur_y.s0.x.max - blur_y.s0.x.min) + 1)) && ((blur_y.s0.y.yi + (blur_y.s0.y.yo * 8)) < ((blur_y.s0.y.max - blur_y.s0.y.min) + 1))))) {
                            blur_y(blur_y.s0.x, blur_y.s0.y) = (((blur_x((blur_y.s0.x + 0), (blur_y.s0.y + -1)) + blur_x((blur_y.s0.x + 0), (blur_y.s0.y + 0))) + blur_x((blur_y.s0.x + 0), (blur_y.s0.y + 1))) / u16(3))
                          }
                        }
                      }
                    }
                  }
                }
              }
            }
        "#]],
    );
}

#[test]
fn sliding_window_within_strips() {
    check(
        "blur_y.split(y, yo, yi, 8).parallel(yo)\nblur_x.store_at(blur_y, yo).compute_at(blur_y, yi)",
        expect![[r#"
            domain { blur_x.s0[y, x], blur_y.s0[y.yo, y.yi, x] }
              filter blur_y.s0
                mark store blur_x
                  mark parallel
                    band [y.yo] permutable coincident [1]
                      band [y.yi] permutable coincident [1]
                        sequence
                          filter blur_x.s0
                            band [y, x] permutable coincident [1, 1]
                          band [x] permutable coincident [1]
            # blur_x: compute at blur_y.s0.y.yi, store at blur_y.s0.y.yo

            let blur_y.s0.x.min = blur_y.min.0
            let blur_y.s0.x.max = ((blur_y.extent.0 + blur_y.min.0) - 1)
            let blur_y.s0.y.min = blur_y.min.1
            let blur_y.s0.y.max = ((blur_y.extent.1 + blur_y.min.1) - 1)
            assert((((blur_y.s0.x.min - 1) >= in.min.0) && ((blur_y.s0.x.max + 1) <= ((in.extent.0 + in.min.0) - 1))), InputTooSmall { input: "in", stage: "blur_x", dim: 0 }, [(blur_y.s0.x.min - 1), (blur_y.s0.x.max + 1), in.min.0, ((in.extent.0 + in.min.0) - 1)])
            assert((((blur_y.s0.y.min - 1) >= in.min.1) && ((min(max(min(((blur_y.s0.y.min + ((((blur_y.s0.y.max - blur_y.s0.y.min) + 8) / 8) * 8)) - 1), blur_y.s0.y.max), blur_y.s0.y.min), ((blur_y.s0.y.min + ((((blur_y.s0.y.max - blur_y.s0.y.min) + 8) / 8) * 8)) - 1)) + 1) <= ((in.extent.1 + in.min.1) - 1))), InputTooSmall { input: "in", stage: "blur_x", dim: 1 }, [(blur_y.s0.y.min - 1), (min(max(min(((blur_y.s0.y.min + ((((blur_y.s0.y.max - blur_y.s0.y.min) + 8) / 8) * 8)) - 1), blur_y.s0.y.max), blur_y.s0.y.min), ((blur_y.s0.y.min + ((((blur_y.s0.y.max - blur_y.s0.y.min) + 8) / 8) * 8)) - 1)) + 1), in.min.1, ((in.extent.1 + in.min.1) - 1)])
            assert(((blur_y.s0.x.min >= blur_y.min.0) && (blur_y.s0.x.max <= ((blur_y.extent.0 + blur_y.min.0) - 1))), OutputTooSmall { output: "blur_y", dim: 0 }, [blur_y.s0.x.min, blur_y.s0.x.max, blur_y.min.0, ((blur_y.extent.0 + blur_y.min.0) - 1)])
            assert(((blur_y.s0.y.min >= blur_y.min.1) && (min(max(min(((blur_y.s0.y.min + ((((blur_y.s0.y.max - blur_y.s0.y.min) + 8) / 8) * 8)) - 1), blur_y.s0.y.max), blur_y.s0.y.min), ((blur_y.s0.y.min + ((((blur_y.s0.y.max - blur_y.s0.y.min) + 8) / 8) * 8)) - 1)) <= ((blur_y.extent.1 + blur_y.min.1) - 1))), OutputTooSmall { output: "blur_y", dim: 1 }, [blur_y.s0.y.min, min(max(min(((blur_y.s0.y.min + ((((blur_y.s0.y.max - blur_y.s0.y.min) + 8) / 8) * 8)) - 1), blur_y.s0.y.max), blur_y.s0.y.min), ((blur_y.s0.y.min + ((((blur_y.s0.y.max - blur_y.s0.y.min) + 8) / 8) * 8)) - 1)), blur_y.min.1, ((blur_y.extent.1 + blur_y.min.1) - 1)])
            produce blur_y {
              parallel (blur_y.s0.y.yo, 0, (((blur_y.s0.y.max - blur_y.s0.y.min) + 8) / 8)) {
                realize blur_x: u16([blur_y.s0.x.min, max(((blur_y.s0.x.max - blur_y.s0.x.min) + 1), 0)], [0, 4]) {
                  for (blur_y.s0.y.yi, 0, 8) {
                    let blur_x.s0.x.min = blur_y.s0.x.min
                    let blur_x.s0.x.max = blur_y.s0.x.max
                    let blur_x.s0.y.min = select((blur_y.s0.y.yi > 0), max((max(blur_y.s0.y.min, min(blur_y.s0.y.max, (((blur_y.s0.y.min + blur_y.s0.y.yi) + (blur_y.s0.y.yo * 8)) - 1))) + 2), select(likely(((blur_y.s0.y.yi + (blur_y.s0.y.yo * 8)) < ((blur_y.s0.y.max - blur_y.s0.y.min) + 1))), (max(min(((blur_y.s0.y.min + blur_y.s0.y.yi) + (blur_y.s0.y.yo * 8)), blur_y.s0.y.max), blur_y.s0.y.min) - 1), (max(min(((blur_y.s0.y.min + blur_y.s0.y.yi) + (blur_y.s0.y.yo * 8)), blur_y.s0.y.max), blur_y.s0.y.min) + 2))), select(likely(((blur_y.s0.y.yi + (blur_y.s0.y.yo * 8)) < ((blur_y.s0.y.max - blur_y.s0.y.min) + 1))), (max(min(((blur_y.s0.y.min + blur_y.s0.y.yi) + (blur_y.s0.y.yo * 8)), blur_y.s0.y.max), blur_y.s0.y.min) - 1), (max(min(((blur_y.s0.y.min + blur_y.s0.y.yi) + (blur_y.s0.y.yo * 8)), blur_y.s0.y.max), blur_y.s0.y.min) + 2)))
                    let blur_x.s0.y.max = (max(min(((blur_y.s0.y.min + blur_y.s0.y.yi) + (blur_y.s0.y.yo * 8)), blur_y.s0.y.max), blur_y.s0.y.min) + 1)
                    produce blur_x {
                      for (blur_x.s0.y, blur_x.s0.y.min, ((blur_x.s0.y.max - blur_x.s0.y.min) + 1)) {
                        for (blur_x.s0.x, blur_x.s0.x.min, ((blur_x.s0.x.max - blur_x.s0.x.min) + 1)) {
                          blur_x(blur_x.s0.x, (blur_x.s0.y % 4)) = (((in((blur_x.s0.x + -1), (blur_x.s0.y + 0)) + in((blur_x.s0.x + 0), (blur_x.s0.y + 0))) + in((blur_x.s0.x + 1), (blur_x.s0.y + 0))) / u16(3))
                        }
                      }
                    }
                    consume blur_x {
                      for (blur_y.s0.x, blur_y.s0.x.min, ((blur_y.s0.x.max - blur_y.s0.x.min) + 1)) {
                        let blur_y.s0.y = max(min((((blur_y.s0.y.yo * 8) + blur_y.s0.y.yi) + blur_y.s0.y.min), blur_y.s0.y.max), blur_y.s0.y.min)
                        if (likely(((blur_y.s0.y.yi + (blur_y.s0.y.yo * 8)) < ((blur_y.s0.y.max - blur_y.s0.y.min) + 1)))) {
                          blur_y(blur_y.s0.x, blur_y.s0.y) = (((blur_x((blur_y.s0.x + 0), ((blur_y.s0.y + -1) % 4)) + blur_x((blur_y.s0.x + 0), ((blur_y.s0.y + 0) % 4))) + blur_x((blur_y.s0.x + 0), ((blur_y.s0.y + 1) % 4))) / u16(3))
                        }
                      }
                    }
                  }
                }
              }
            }
        "#]],
    );
}

/// Storage outside a parallel loop whose iterations each compute the func
/// would be one buffer written by concurrent iterations at once; it moves
/// into the parallel loop's body, private to each iteration (nothing is
/// reused across parallel iterations: the sliding window never slides
/// over a parallel loop). Without this, a scan stored there gave wrong
/// results on two threads (random schedule histogram_equalize 179).
#[test]
fn storage_outside_a_parallel_loop_that_computes_it_moves_inside() {
    let p = common::with_schedule(
        common::blur(),
        "blur_y.parallel(y)\nblur_x.compute_at(blur_y, x).store_root()",
    );
    let lowered = lower(&p, &LowerOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let tree = lowered.schedule_tree.to_string();
    assert!(
        tree.contains("# blur_x: compute at blur_y.s0.x, store at blur_y.s0.y"),
        "{tree}"
    );
    let nest = lowered.loop_nest.to_string();
    let parallel = nest
        .find("parallel (blur_y.s0.y")
        .unwrap_or_else(|| panic!("{nest}"));
    let realize = nest
        .find("realize blur_x")
        .unwrap_or_else(|| panic!("{nest}"));
    assert!(
        parallel < realize,
        "blur_x is stored outside the parallel loop:\n{nest}"
    );
}

/// A vector loop with only unrolled loops inside it (`reorder(c, x)
/// .vectorize(x, 4).unroll(c)`, bilateral_grid's blury) is innermost once
/// those are unrolled: it gets a steady state without the shift-inwards
/// `min`, whose addresses are then affine in the loop variable.
#[test]
fn vector_loops_around_unrolled_loops_get_a_steady_state() {
    let p = argent_lang::compile(
        "input f32 in(x, y)\n\
         g(x, y, c) = in(x, y) * f32(c + 1)\n\
         f(x, y) = g(x, y, 0) + g(x, y, 1)\n\
         output f\n\
         schedule { g.compute_root().reorder(c, x, y).vectorize(x, 4).unroll(c) }\n",
    )
    .unwrap_or_else(|e| panic!("{e:?}"));
    let lowered = lower(&p, &LowerOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let body = lowered.module.body.to_string();
    let stores: Vec<&str> = body
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("g[ramp("))
        .collect();
    assert!(
        stores.iter().any(|l| !l.contains("min(")),
        "no steady-state store without the clamp:\n{body}"
    );
}
