//! JSON descriptions of what the page needs to know about a pipeline and
//! its diagnostics. These structs are the wire format between the compiler
//! worker and the TypeScript runtime (`web/src/types.ts` mirrors them), so
//! field names are camelCase and stable.

use argent_ir::{Pipeline, Span, Type};
use serde::Serialize;

/// One input image the pipeline reads.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InputDescription {
    pub name: String,
    /// Element type as written in the language (`u8`, `f32`, ...).
    #[serde(rename = "type")]
    pub ty: String,
    /// Dimension names, innermost first (e.g. `["x", "y", "c"]`).
    pub dims: Vec<String>,
}

/// One output image the pipeline produces.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OutputDescription {
    pub name: String,
    #[serde(rename = "type")]
    pub ty: String,
    pub dims: Vec<String>,
}

/// One scalar parameter, with what a slider needs.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ParamDescription {
    pub name: String,
    #[serde(rename = "type")]
    pub ty: String,
    pub default: Option<f64>,
    /// Inclusive `[min, max]` when declared.
    pub range: Option<[f64; 2]>,
}

/// Inputs, outputs and parameters of a compiled pipeline.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PipelineDescription {
    pub inputs: Vec<InputDescription>,
    pub outputs: Vec<OutputDescription>,
    pub params: Vec<ParamDescription>,
}

/// Describes a checked pipeline's interface.
pub fn describe_pipeline(pipeline: &Pipeline) -> PipelineDescription {
    PipelineDescription {
        inputs: pipeline
            .inputs
            .iter()
            .map(|input| InputDescription {
                name: input.name.clone(),
                ty: type_name(input.ty),
                dims: input.dims.clone(),
            })
            .collect(),
        outputs: pipeline
            .outputs
            .iter()
            .map(|name| {
                // The front end guarantees every output names a func; a
                // missing one would be a front-end bug, so describe it
                // without dimensions rather than failing the compile.
                let func = pipeline.func(name);
                OutputDescription {
                    name: name.clone(),
                    ty: func.map(|f| type_name(f.ty)).unwrap_or_default(),
                    dims: func.map(|f| f.args.clone()).unwrap_or_default(),
                }
            })
            .collect(),
        params: pipeline
            .params
            .iter()
            .map(|param| ParamDescription {
                name: param.name.clone(),
                ty: type_name(param.ty),
                default: param.default,
                range: param.range.map(|(lo, hi)| [lo, hi]),
            })
            .collect(),
    }
}

fn type_name(ty: Type) -> String {
    ty.to_string()
}

/// A source position as editors show it: 1-based line, 1-based column
/// counted in UTF-16 code units (what JavaScript strings and Monaco/CodeMirror
/// use), plus the byte offset the compiler uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Position {
    pub offset: u32,
    /// Offset in UTF-16 code units, for slicing the JavaScript string.
    pub utf16_offset: u32,
    pub line: u32,
    pub column: u32,
}

/// A span resolved against its source text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SpanDescription {
    pub start: Position,
    pub end: Position,
}

/// Resolves byte offsets to lines and columns. Offsets past the end or
/// inside a UTF-8 sequence are clamped, so a bad span from a compiler bug
/// never panics the page.
pub fn resolve_span(source: &str, span: Span) -> SpanDescription {
    SpanDescription {
        start: position(source, span.start as usize),
        end: position(source, span.end.max(span.start) as usize),
    }
}

fn position(source: &str, offset: usize) -> Position {
    let mut offset = offset.min(source.len());
    while !source.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &source[..offset];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = before.matches('\n').count() + 1;
    let column = before[line_start..].encode_utf16().count() + 1;
    Position {
        offset: offset as u32,
        utf16_offset: before.encode_utf16().count() as u32,
        line: line as u32,
        column: column as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::expect;

    #[test]
    fn positions_count_lines_and_utf16_columns() {
        let source = "input u8 in(x, y)\n# é😀\nout(x, y) = in(x, y)\n";
        let out_offset = source.find("out").unwrap();
        let span = resolve_span(source, Span::new(out_offset, out_offset + 3));
        expect![[r#"
            SpanDescription {
                start: Position {
                    offset: 27,
                    utf16_offset: 24,
                    line: 3,
                    column: 1,
                },
                end: Position {
                    offset: 30,
                    utf16_offset: 27,
                    line: 3,
                    column: 4,
                },
            }
        "#]]
        .assert_debug_eq(&span);
        // The emoji is one code point, four bytes, two UTF-16 units.
        let emoji = source.find('😀').unwrap();
        assert_eq!(position(source, emoji + 4).column, 6);
    }

    #[test]
    fn out_of_range_and_mid_character_offsets_are_clamped() {
        let source = "é\nab";
        assert_eq!(position(source, 1).offset, 0);
        let end = position(source, 999);
        assert_eq!((end.offset, end.line, end.column), (5, 2, 3));
    }
}
