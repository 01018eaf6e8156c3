//! `np.pad`: an array widened axis by axis, each axis a concatenation of what goes before, the
//! array and what goes after — a constant, the edge repeated, a reflection or the far end
//! (`mode="constant" | "edge" | "reflect" | "symmetric" | "wrap"`), as numpy pads: the first axis
//! first, so the corners come from the axes already padded.

use ollie_graph::{NodeId, Op};
use ruff_text_size::TextRange;

use crate::builder::{Arg, Builder, CallArgs, Result};
use crate::diagnostic::{Code, Diagnostic};
use crate::numpy::required;
use crate::value::Value;

/// The functions this module provides, as `np.NAME`.
pub const FUNCTIONS: &[&str] = &["pad"];

const MODES: &[&str] = &["constant", "edge", "reflect", "symmetric", "wrap"];

impl Builder<'_> {
    /// `np.pad(array, pad_width, mode="constant", constant_values=0)`.
    pub fn pad_call(&mut self, args: CallArgs) -> Result<Value> {
        let call = args.range;
        let fname = "np.pad";
        let bound: [Option<Arg>; 4] = args.bind(fname, None, &["array", "pad_width", "mode", "constant_values"])?.try_into().expect("four parameters");
        let [array, width, mode, fill] = bound;
        let array = required(array, fname, "array", call)?;
        let width = required(width, fname, "pad_width", call)?;
        let mut id = self.tensor(&array, None)?;
        let ty = self.ty(id).clone();
        let widths = self.pad_widths(&width, ty.rank())?;
        let mode = match &mode {
            None => "constant",
            Some(Arg { value: Value::Str(m), range }) => MODES.iter().copied().find(|k| k == m).ok_or_else(|| {
                Diagnostic::error(Code::UnsupportedArgument, format!("`np.pad` mode \"{m}\""))
                    .label(*range, "not supported")
                    .help(format!("supported modes: {}", MODES.join(", ")))
            })?,
            Some(other) => return Err(Diagnostic::error(Code::BadValue, "`mode` must be a string").label(other.range, "here")),
        };
        let fill = match fill {
            Some(f) if mode != "constant" => {
                return Err(Diagnostic::error(Code::BadValue, format!("`constant_values` with mode \"{mode}\"")).label(f.range, "numpy takes it only with mode \"constant\""))
            }
            Some(f) => match f.value.number() {
                Some(v) => v,
                None => {
                    return Err(Diagnostic::error(Code::UnsupportedArgument, "`constant_values` other than one number")
                        .label(f.range, "per-axis values are not supported")
                        .help("pad with one value, or concatenate the pieces yourself"))
                }
            },
            None => 0.0,
        };
        for (k, &(before, after)) in widths.iter().enumerate() {
            let n = self.ty(id).shape[k];
            let reach = match mode {
                "reflect" => n.saturating_sub(1),
                "edge" | "constant" => usize::MAX,
                _ => n,
            };
            if before.max(after) > reach || (n == 0 && (before, after) != (0, 0)) {
                return Err(Diagnostic::error(Code::UnsupportedArgument, format!("padding axis {k} of {} by {before} and {after} in mode \"{mode}\"", ty))
                    .label(width.range, format!("more than the {} elements mode \"{mode}\" reaches here", reach.min(n)))
                    .help("numpy repeats the reflection or wrap; pad in steps, or by at most the axis' length"));
            }
            let mut parts = Vec::new();
            if before > 0 {
                parts.push(self.pad_piece(id, k, before, true, mode, fill, call)?);
            }
            parts.push(id);
            if after > 0 {
                parts.push(self.pad_piece(id, k, after, false, mode, fill, call)?);
            }
            if parts.len() > 1 {
                id = self.push(Op::Concat { axis: k }, parts, call)?;
            }
        }
        Ok(Value::Tensor(id))
    }

    /// What goes before (`front`) or after `id` along axis `k`: `len` elements.
    #[allow(clippy::too_many_arguments)]
    fn pad_piece(&mut self, id: NodeId, k: usize, len: usize, front: bool, mode: &str, fill: f64, range: TextRange) -> Result<NodeId> {
        let n = self.ty(id).shape[k];
        let mut shape = self.ty(id).shape.clone();
        shape[k] = len;
        Ok(match mode {
            "constant" => {
                let dtype = self.ty(id).dtype;
                self.full(&shape, dtype.round(fill), dtype, range)?
            }
            "edge" => {
                let edge = self.range_along(id, k, if front { 0 } else { n - 1 }, 1, range)?;
                self.broadcast_to(edge, &shape, range)?
            }
            // `reflect` mirrors about the edge element, `symmetric` repeats it.
            "reflect" | "symmetric" => {
                let skip = (mode == "reflect") as usize;
                let start = if front { skip } else { n - skip - len };
                let part = self.range_along(id, k, start, len, range)?;
                self.flip(part, &[k], range)?
            }
            _ => self.range_along(id, k, if front { n - len } else { 0 }, len, range)?,
        })
    }

    /// numpy's `pad_width`: an int, `(before, after)`, `((before, after),)` or one pair per axis.
    fn pad_widths(&self, arg: &Arg, rank: usize) -> Result<Vec<(usize, usize)>> {
        let bad = || {
            Diagnostic::error(Code::BadValue, "`pad_width` must be non-negative integers: `n`, `(before, after)` or one pair per axis")
                .label(arg.range, "here")
        };
        let count = |v: &Value| v.int().filter(|&i| i >= 0 && !matches!(v, Value::Bool(_))).map(|i| i as usize).ok_or_else(bad);
        let pair = |v: &Value| -> Result<(usize, usize)> {
            match v {
                Value::Tuple(items) if items.len() == 2 => Ok((count(&items[0])?, count(&items[1])?)),
                Value::Tuple(items) if items.len() == 1 => Ok((count(&items[0])?, count(&items[0])?)),
                other => Ok((count(other)?, count(other)?)),
            }
        };
        match &arg.value {
            Value::Tuple(items) if items.len() == rank && items.iter().all(|i| matches!(i, Value::Tuple(_))) => items.iter().map(pair).collect(),
            Value::Tuple(items) if items.len() == 1 => Ok(vec![pair(&items[0])?; rank]),
            Value::Tuple(items) if items.len() == 2 && items.iter().all(|i| !matches!(i, Value::Tuple(_))) => Ok(vec![pair(&arg.value)?; rank]),
            Value::Tuple(_) => Err(bad().help(format!("an array of rank {rank} takes one pair or {rank} pairs"))),
            other => Ok(vec![pair(other)?; rank]),
        }
    }
}
