//! Parameter and return annotations: the strings `"f32[B, H, 576]"` that give static types.

use ollie_graph::{DType, TensorType};
use ruff_text_size::{TextRange, TextSize};

use crate::diagnostic::{Code, Diagnostic};

/// Parses `text`, which starts at byte `base` of the source, into a tensor type. An integer
/// dimension is read here; any other (a constant's name, `L - 3`, `2 * D`) goes to `resolve` with
/// its span in the source, which evaluates it against the module's constants.
pub fn parse(text: &str, base: TextSize, resolve: &mut dyn FnMut(&str, TextRange) -> Result<usize, Diagnostic>) -> Result<TensorType, Diagnostic> {
    let span = |start: usize, end: usize| TextRange::new(base + TextSize::from(start as u32), base + TextSize::from(end as u32));
    let expected = "an annotation like \"f32[B, H, 576]\": a dtype (f32 or f64), then dimensions (integers, module-level integer constants, or expressions of them such as `L - 3`) in brackets";
    let bytes = text.as_bytes();
    let mut pos = 0;
    let skip_ws = |pos: &mut usize| {
        while *pos < bytes.len() && bytes[*pos].is_ascii_whitespace() {
            *pos += 1;
        }
    };
    let word = |pos: &mut usize| -> (usize, usize) {
        let start = *pos;
        while *pos < bytes.len() && (bytes[*pos].is_ascii_alphanumeric() || bytes[*pos] == b'_') {
            *pos += 1;
        }
        (start, *pos)
    };
    skip_ws(&mut pos);
    let (ds, de) = word(&mut pos);
    let dtype = match &text[ds..de] {
        "f32" | "float32" => DType::F32,
        "f64" | "float64" => DType::F64,
        "f16" | "float16" => DType::F16,
        "bf16" | "bfloat16" => DType::BF16,
        "i32" | "int32" => DType::I32,
        "i8" | "int8" => DType::I8,
        "u8" | "uint8" => DType::U8,
        "i64" | "int64" => DType::I64,
        "bool" => DType::Bool,
        "" => {
            return Err(Diagnostic::error(Code::BadAnnotation, "malformed type annotation")
                .label(span(0, text.len()), "expected a dtype such as `f32`")
                .help(expected))
        }
        other => {
            return Err(Diagnostic::error(Code::UnsupportedDtype, format!("unsupported dtype `{other}` in annotation"))
                .label(span(ds, de), "not a supported dtype")
                .help("kernel parameters and results are `f32`, `f64`, `f16`, `bf16`, `i64`, `i32`, `i8`, `u8` or `bool`"))
        }
    };
    skip_ws(&mut pos);
    let mut shape = Vec::new();
    if pos < bytes.len() && bytes[pos] == b'[' {
        pos += 1;
        loop {
            skip_ws(&mut pos);
            if pos < bytes.len() && bytes[pos] == b']' {
                pos += 1;
                break;
            }
            // A dimension runs to the next `,` or `]` outside parentheses, or to the first
            // character no integer expression holds.
            let s = pos;
            let mut depth = 0i32;
            let in_expression = |b: u8| b.is_ascii_alphanumeric() || b" _+-*/%()[]<>&|^~.\t".contains(&b);
            while pos < bytes.len() && in_expression(bytes[pos]) && !(depth == 0 && matches!(bytes[pos], b',' | b']')) {
                match bytes[pos] {
                    b'(' | b'[' => depth += 1,
                    b')' | b']' => depth -= 1,
                    _ => {}
                }
                pos += 1;
            }
            let e = s + text[s..pos].trim_end().len();
            let token = &text[s..e];
            if token.is_empty() {
                let end = (pos + 1).min(text.len()).max(pos);
                return Err(Diagnostic::error(Code::BadAnnotation, "malformed type annotation")
                    .label(span(pos, end), "expected a dimension: an integer or a constant's name")
                    .help(expected));
            }
            let dim = if token.bytes().all(|b| b.is_ascii_digit()) {
                token.parse::<usize>().map_err(|_| {
                    Diagnostic::error(Code::BadAnnotation, "dimension too large").label(span(s, e), "does not fit in 64 bits")
                })?
            } else {
                resolve(token, span(s, e))?
            };
            shape.push(dim);
            skip_ws(&mut pos);
            match bytes.get(pos) {
                Some(b',') => pos += 1,
                Some(b']') => {}
                _ => {
                    let end = (pos + 1).min(text.len());
                    return Err(Diagnostic::error(Code::BadAnnotation, "malformed type annotation")
                        .label(span(pos.min(text.len()), end), "expected `,` or `]`")
                        .help(expected));
                }
            }
        }
    }
    skip_ws(&mut pos);
    if pos != bytes.len() {
        return Err(Diagnostic::error(Code::BadAnnotation, "malformed type annotation")
            .label(span(pos, text.len()), "unexpected text after the type")
            .help(expected));
    }
    Ok(TensorType::new(dtype, shape))
}
