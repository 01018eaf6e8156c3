//! `np.lib.stride_tricks.sliding_window_view`: every window of an array as a view, a gather whose
//! source index on a windowed axis is the window's position plus the offset in it (`o + k`);
//! slicing the view (`v[:, :, ::S]`) makes that `o · S + k`, and a window of a slice dilates it.

use ollie_graph::GatherAxis;

use crate::builder::{Arg, Builder, CallArgs, Result};
use crate::diagnostic::{Code, Diagnostic};
use crate::numpy::required;
use crate::value::Value;

/// The function's name under `np.`.
pub const FUNCTION: &str = "lib.stride_tricks.sliding_window_view";

/// The module it is imported from (`from numpy.lib.stride_tricks import sliding_window_view`).
pub const MODULE: &str = "numpy.lib.stride_tricks";

impl Builder<'_> {
    /// `sliding_window_view(x, window_shape, axis=None, *, subok=False, writeable=False)`.
    pub fn sliding_window_view_call(&mut self, args: CallArgs) -> Result<Value> {
        let call = args.range;
        let fname = "np.lib.stride_tricks.sliding_window_view";
        let bound: [Option<Arg>; 5] = args.bind(fname, None, &["x", "window_shape", "axis", "subok", "writeable"])?.try_into().expect("five parameters");
        let [x, window, axis, subok, writeable] = bound;
        let x = required(x, fname, "x", call)?;
        let window = required(window, fname, "window_shape", call)?;
        self.flag(subok, "subok")?;
        if let Some(w) = writeable.filter(|w| w.value != Value::Bool(false)) {
            return Err(Diagnostic::error(Code::UnsupportedArgument, "a writeable window view")
                .label(w.range, "ollie's window views are read-only, as numpy's are by default")
                .help("write into a copy of the array, not through its windows"));
        }
        let id = self.tensor(&x, None)?;
        let shape = self.ty(id).shape.clone();
        let sizes = self.shape_value(&window)?;
        let axes = match &axis {
            None => (0..shape.len()).collect(),
            Some(a) => self.axis_list(a, shape.len())?,
        };
        if sizes.len() != axes.len() {
            let what = if axis.is_none() { format!("the array's {} axes", shape.len()) } else { format!("{} axes", axes.len()) };
            return Err(Diagnostic::error(Code::BadValue, format!("{} window sizes for {what}", sizes.len()))
                .label(window.range, "one window size per axis")
                .help("give `axis=` the axes the windows slide along, one per size"));
        }
        if let Some(a) = axis.as_ref().filter(|_| axes.iter().enumerate().any(|(i, a)| axes[..i].contains(a))) {
            return Err(Diagnostic::error(Code::UnsupportedArgument, "windows of windows along the same axis")
                .label(a.range, "an axis appears twice")
                .help("slide one window along each axis"));
        }
        let mut out = shape.clone();
        let mut from: Vec<GatherAxis> = (0..shape.len()).map(|axis| GatherAxis::Along { axis, start: 0, step: 1 }).collect();
        for (t, (&axis, &size)) in axes.iter().zip(&sizes).enumerate() {
            if size == 0 || size > shape[axis] {
                return Err(Diagnostic::error(Code::BadValue, format!("a window of {size} along an axis of {}", shape[axis]))
                    .label(window.range, if size == 0 { "an empty window" } else { "longer than the axis: numpy raises" }));
            }
            out[axis] = shape[axis] - size + 1;
            from[axis] = GatherAxis::Window { axis, start: 0, step: 1, window: shape.len() + t, dilation: 1 };
        }
        out.extend(&sizes);
        Ok(Value::Tensor(self.gather(id, out, from, Vec::new(), call)?))
    }
}
