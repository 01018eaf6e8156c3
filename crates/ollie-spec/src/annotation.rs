//! Parameter and return annotations: the strings `"f32[B, H, 576]"` that give static types.

use ollie_graph::{DType, TensorType};
use ruff_text_size::{TextRange, TextSize};

use crate::diagnostic::{Code, Diagnostic};

/// What a dimension name resolves to, as the caller's module constants know it.
pub enum DimValue {
    Int(i64),
    /// A constant that exists but is not an integer (its kind, for the message).
    NotInt(&'static str),
}

/// Parses `text`, which starts at byte `base` of the source, into a tensor type. `lookup` resolves
/// dimension names to module constants.
pub fn parse(text: &str, base: TextSize, lookup: &dyn Fn(&str) -> Option<DimValue>) -> Result<TensorType, Diagnostic> {
    let span = |start: usize, end: usize| TextRange::new(base + TextSize::from(start as u32), base + TextSize::from(end as u32));
    let expected = "an annotation like \"f32[B, H, 576]\": a dtype (f32 or f64), then dimensions (integers or names of module-level integer constants) in brackets";
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
        "" => {
            return Err(Diagnostic::error(Code::BadAnnotation, "malformed type annotation")
                .label(span(0, text.len()), "expected a dtype such as `f32`")
                .help(expected))
        }
        other => {
            return Err(Diagnostic::error(Code::UnsupportedDtype, format!("unsupported dtype `{other}` in annotation"))
                .label(span(ds, de), "not a supported dtype")
                .help("kernel parameters and results are `f32` or `f64`"))
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
            let (s, e) = word(&mut pos);
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
                match lookup(token) {
                    Some(DimValue::Int(v)) if v >= 0 => v as usize,
                    Some(DimValue::Int(v)) => {
                        return Err(Diagnostic::error(Code::BadAnnotation, format!("dimension `{token}` is negative ({v})"))
                            .label(span(s, e), "a dimension must be zero or more"))
                    }
                    Some(DimValue::NotInt(kind)) => {
                        return Err(Diagnostic::error(Code::BadAnnotation, format!("dimension `{token}` is a {kind}, not an integer"))
                            .label(span(s, e), "dimensions must be integers"))
                    }
                    None => {
                        return Err(Diagnostic::error(Code::UnknownDimension, format!("unknown dimension `{token}`"))
                            .label(span(s, e), "not a module-level constant")
                            .help(format!("define it at module level, e.g. `{token} = 128`, or write the size as an integer")))
                    }
                }
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
