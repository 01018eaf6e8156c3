//! C emission: a loop nest as a C11 function implementing the kernel ABI.

use std::fmt::Write;

use ollie_graph::{BinaryOp, CmpOp, DType, UnaryOp};

use crate::ir::{Affine, BufferId, BufferKind, Dynamic, Expr, Keep, LoopKind, LoopNest, Stmt, VarId, STACK_BYTES};

/// Names C reserves, which a spec parameter might still use.
const C_KEYWORDS: &[&str] = &[
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
    "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict",
    "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union",
    "unsigned", "void", "volatile", "while", "_Bool", "bool", "main", "free", "malloc", "exp",
    "log", "sqrt", "tanh", "fabs", "pow", "trunc", "expf", "logf", "sqrtf", "tanhf", "fabsf",
    "powf", "truncf", "INFINITY", "NAN", "NULL",
];

/// The C source of `nest`: `void NAME(const T *restrict in..., T *restrict out...)`.
pub fn emit_c(nest: &LoopNest) -> String {
    let c = Emitter::new(nest);
    c.kernel()
}

/// The kernel's prototype, without the `;`: the ABI every candidate for `nest` implements.
pub fn prototype(nest: &LoopNest) -> String {
    Emitter::new(nest).prototype()
}

/// A load a register transpose serves (see `Emitter::transposed`): its rows' vectors are named
/// `name`.
#[derive(Clone)]
struct Transposed {
    buffer: BufferId,
    offset: Affine,
    name: String,
}

/// A serial loop over `outer` around a vector loop over `var` that runs in blocks of `w` × `w`,
/// with `loads` read through register transposes.
struct TransposedBlock<'b> {
    outer: VarId,
    outer_extent: usize,
    var: VarId,
    extent: usize,
    w: u32,
    stream: bool,
    body: &'b [Stmt],
    loads: Vec<Transposed>,
}

struct Emitter<'a> {
    nest: &'a LoopNest,
    /// C name of each buffer.
    names: Vec<String>,
    /// The type every expression is computed in: double when any buffer is f64, else float.
    wide: bool,
    /// Buffers some statement reads: an output among them is not streamed.
    read: Vec<BufferId>,
    /// Set while a gather's prefetch is emitted: loads clamp their offsets into the buffer.
    clamped: std::cell::Cell<bool>,
}

impl<'a> Emitter<'a> {
    fn new(nest: &'a LoopNest) -> Emitter<'a> {
        let mut names: Vec<String> = Vec::new();
        for b in &nest.buffers {
            let mut name = b.name.clone();
            let generated = matches!(b.kind, BufferKind::Input(_)) && is_generated_name(&name);
            if C_KEYWORDS.contains(&name.as_str()) || generated || names.contains(&name) || name.starts_with("ollie_") {
                name.push('_');
                while names.contains(&name) {
                    name.push('_');
                }
            }
            names.push(name);
        }
        let wide = nest.computes_in_f64();
        Emitter { nest, names, wide, read: crate::ir::buffers_read(&nest.body), clamped: std::cell::Cell::new(false) }
    }

    fn scalar(&self) -> &'static str {
        if self.wide { "double" } else { "float" }
    }

    /// The C type of `b`'s elements: its dtype's for an input (`int32_t`, `int64_t`, `uint8_t`
    /// for booleans, ...); a result's or temporary's integers and booleans are `float` (see
    /// [`DType::result`]).
    fn ctype(&self, b: &crate::ir::Buffer) -> &'static str {
        let dtype = if matches!(b.kind, BufferKind::Input(_)) { b.dtype } else { b.dtype.result() };
        match dtype {
            DType::F64 => "double",
            DType::F16 | DType::BF16 => "uint16_t",
            DType::I32 => "int32_t",
            DType::I64 => "int64_t",
            DType::I8 => "int8_t",
            // numpy's booleans: a byte, 0 or 1.
            DType::U8 | DType::Bool => "uint8_t",
            DType::F32 => "float",
        }
    }

    /// Whether `buffer` holds integers (an integer or boolean input), which a vector load does
    /// not convert.
    fn integer(&self, buffer: BufferId) -> bool {
        let b = self.nest.buffer(buffer);
        matches!(b.kind, BufferKind::Input(_)) && b.dtype.is_integral()
    }

    /// The offset a gather reads at: its affine part plus each index's, clamped into its axis.
    fn gather_offset(&self, offset: &Affine, indices: &[Dynamic]) -> String {
        let mut at = offset.to_string();
        for d in indices {
            write!(at, " + {} * ollie_ix((long)({}), {})", d.stride, self.expr(&d.value), d.extent).unwrap();
        }
        at
    }

    /// `f16` or `bf16` for a buffer of 16-bit floats (an input or output: temporaries are
    /// float32), which loads convert from and stores round to.
    fn half(&self, buffer: BufferId) -> Option<&'static str> {
        match self.nest.buffer(buffer).dtype {
            DType::F16 => Some("f16"),
            DType::BF16 => Some("bf16"),
            _ => None,
        }
    }

    /// The element `buffer[offset]` read as a value of the compute type.
    fn read(&self, buffer: BufferId, offset: &Affine) -> String {
        self.converted(buffer, self.element(buffer, offset))
    }

    /// `element`, an element of `buffer` as C, as a value of the compute type (converted from a
    /// 16-bit float).
    fn converted(&self, buffer: BufferId, element: String) -> String {
        match self.half(buffer) {
            Some(h) => format!("ollie_{h}_f32({element})"),
            None => element,
        }
    }

    /// The statement storing `value` (of the compute type) into `lvalue`, an element of `buffer`.
    fn assign(&self, buffer: BufferId, lvalue: &str, value: &str) -> String {
        match self.half(buffer) {
            Some(h) => format!("{lvalue} = ollie_f32_{h}({value});"),
            None => format!("{lvalue} = {value};"),
        }
    }

    /// The value a store into `buffer` computes: without a cast to the buffer's 16-bit dtype,
    /// which the store itself rounds to.
    fn stored<'e>(&self, buffer: BufferId, value: &'e Expr) -> &'e Expr {
        match value {
            Expr::Cast(dtype, inner) if dtype.is_half() && *dtype == self.nest.buffer(buffer).dtype => inner,
            _ => value,
        }
    }

    /// A vector load of `w` lanes from `&name[at]` (converted, from 16-bit floats).
    fn vector_load(&self, buffer: BufferId, at: &str, w: u32) -> String {
        let name = &self.names[buffer.0 as usize];
        match self.half(buffer) {
            Some(h) => format!("ollie_vload_{h}{w}(&{name}[{at}])"),
            None => format!("ollie_load{w}(&{name}[{at}])"),
        }
    }

    fn kernel(&self) -> String {
        let mut out = String::new();
        let s = self.scalar();
        writeln!(out, "/* {}: generated by ollie from its spec. */", self.nest.name).unwrap();
        out.push_str("#include <math.h>\n#include <stdlib.h>\n");
        // The function first, so that only the widths whose loops call vector math get it, and
        // the 16-bit conversions only where some statement converts.
        let mut function = String::new();
        self.function(&mut function);
        let converts = ["ollie_f16_f32(", "ollie_bf16_f32(", "ollie_f32_f16(", "ollie_f32_bf16("].iter().any(|f| function.contains(f));
        let sorts = ["ollie_sort(", "ollie_keep_low(", "ollie_keep_high("].iter().any(|f| function.contains(f));
        if converts || sorts || self.nest.buffers.iter().any(|b| b.dtype.is_half() || b.dtype.is_integral()) {
            out.push_str("#include <stdint.h>\n");
        }
        out.push('\n');
        if converts {
            out.push_str(HALF_CONVERSIONS);
        }
        if function.contains("ollie_ix(") {
            out.push_str(GATHER_INDEX);
        }
        if sorts {
            out.push_str(&sort_helpers(self.wide));
        }
        // numpy's maximum/minimum propagate NaN; C's fmax/fmin do not.
        writeln!(out, "static inline {s} ollie_max({s} a, {s} b) {{ return a != a ? a : (b != b ? b : (a > b ? a : b)); }}").unwrap();
        writeln!(out, "static inline {s} ollie_min({s} a, {s} b) {{ return a != a ? a : (b != b ? b : (a < b ? a : b)); }}\n").unwrap();
        let mut widths = Vec::new();
        vector_widths(&self.nest.body, &mut widths);
        widths.sort_unstable();
        widths.dedup();
        if !widths.is_empty() {
            // Vectors wider than the machine's registers are fine in static functions; GCC warns
            // about their (here irrelevant) calling convention.
            out.push_str("#pragma GCC diagnostic ignored \"-Wpsabi\"\n");
        }
        for w in widths {
            out.push_str(&self.vector_helpers(w));
            for op in [BinaryOp::Add, BinaryOp::Mul, BinaryOp::Max, BinaryOp::Min] {
                if function.contains(&format!("ollie_reduce_{}{w}(", lane_reduction(op))) {
                    out.push_str(&self.reduce_helper(op, w));
                }
            }
            if function.contains(&format!("ollie_transpose{w}(")) {
                out.push_str(&transpose_helper(w));
            }
            if !self.wide && VECTOR_MATH.iter().any(|f| function.contains(&format!("ollie_v{f}{w}("))) {
                out.push_str(&vector_math(w));
                out.push('\n');
            }
        }
        out.push_str(&function);
        out
    }

    /// The kernel's function: its temporaries, its loops.
    fn function(&self, out: &mut String) {
        writeln!(out, "{} {{", self.prototype()).unwrap();
        // Folded temporaries are declared in the loop they live in, except those on the heap
        // in a loop that runs on one thread: allocated once here (an allocation of a packed
        // panel per iteration costs its pages' faults each time).
        // Not those no statement touches any more (inlined).
        let temps: Vec<_> = self.nest.temps().filter(|(id, b)| (b.scope.is_none() || self.hoisted(*id)) && touched(&self.nest.body, *id)).collect();
        for (id, b) in &temps {
            let t = self.ctype(b);
            if b.scope.is_some() {
                writeln!(out, "    {t} *{} = ({t} *)aligned_alloc(64, {});", self.names[id.0 as usize], b.bytes().next_multiple_of(64)).unwrap();
            } else {
                writeln!(out, "    {t} *{} = ({t} *)malloc(sizeof({t}) * {});", self.names[id.0 as usize], b.len().max(1)).unwrap();
            }
        }
        if !temps.is_empty() {
            let any_null: Vec<String> = temps.iter().map(|(id, _)| format!("!{}", self.names[id.0 as usize])).collect();
            writeln!(out, "    if ({}) goto done;", any_null.join(" || ")).unwrap();
        }
        for stmt in &self.nest.body {
            self.stmt(out, stmt, 1);
        }
        if !temps.is_empty() {
            out.push_str("done:\n");
            for (id, _) in &temps {
                writeln!(out, "    free({});", self.names[id.0 as usize]).unwrap();
            }
        }
        out.push_str("}\n");
    }

    fn prototype(&self) -> String {
        let mut params = Vec::new();
        for (id, b) in self.nest.inputs() {
            params.push(format!("const {} *restrict {}", self.ctype(b), self.names[id.0 as usize]));
        }
        for (id, b) in self.nest.outputs() {
            params.push(format!("{} *restrict {}", self.ctype(b), self.names[id.0 as usize]));
        }
        format!("void {}({})", self.nest.name, params.join(", "))
    }

    fn stmt(&self, out: &mut String, stmt: &Stmt, depth: usize) {
        let pad = "    ".repeat(depth);
        match stmt {
            Stmt::Loop { var, extent, kind: LoopKind::Vector(w), body } => self.vector_loop(out, *var, *extent, *w, false, body, depth),
            Stmt::Loop { var, extent, kind: LoopKind::Stream(w), body } => self.vector_loop(out, *var, *extent, *w, true, body, depth),
            Stmt::Loop { var, extent, kind: LoopKind::Parallel, body } if matches!(body.as_slice(), [Stmt::Loop { kind: LoopKind::Joined, .. }]) => self.joined_loop(out, *var, *extent, body, depth),
            Stmt::Loop { var, extent, kind: kind @ (LoopKind::Sort(_) | LoopKind::ArgSort(_)), body } => self.sort_loop(out, *var, *extent, *kind, body, depth),
            Stmt::Loop { var, extent, kind, body } => {
                if let (LoopKind::Serial | LoopKind::Unrolled(_), Some(block)) = (kind, self.transposed(*var, *extent, body)) {
                    return self.transposed_loop(out, &block, depth);
                }
                let v = var.to_string();
                match kind {
                    // A joined loop outside `joined_loop` cannot be: `join` makes them there.
                    LoopKind::Serial | LoopKind::Joined => {}
                    LoopKind::Parallel => writeln!(out, "{pad}#pragma omp parallel for schedule(static)").unwrap(),
                    LoopKind::Simd => writeln!(out, "{pad}#pragma omp simd").unwrap(),
                    LoopKind::Unrolled(n) => writeln!(out, "{pad}#pragma GCC unroll {n}").unwrap(),
                    LoopKind::Vector(_) | LoopKind::Stream(_) | LoopKind::Sort(_) | LoopKind::ArgSort(_) => unreachable!("matched above"),
                }
                writeln!(out, "{pad}for (long {v} = 0; {v} < {extent}; {v}++) {{").unwrap();
                self.scoped_temps(out, &[*var], body, depth + 1);
                writeln!(out, "{pad}}}").unwrap();
            }
            Stmt::Store { buffer, offset, value } => {
                writeln!(out, "{pad}{}", self.assign(*buffer, &self.element(*buffer, offset), &self.expr(self.stored(*buffer, value)))).unwrap();
            }
            Stmt::Prefetch { buffer, offset, indices } => {
                // A gather's next index may lie past its buffer: its loads are clamped.
                self.clamped.set(true);
                let at = self.gather_offset(offset, indices);
                self.clamped.set(false);
                writeln!(out, "{pad}__builtin_prefetch(&{}[{at}]);", self.names[buffer.0 as usize]).unwrap();
            }
        }
    }

    /// A sort loop (see [`LoopKind::Sort`]): its body's values made items (`sort.c`), sorted,
    /// and the values (or indices) stored in order. The items and the sort's spare room are
    /// on the stack up to [`STACK_BYTES`], else on the heap.
    fn sort_loop(&self, out: &mut String, var: VarId, n: usize, kind: LoopKind, body: &[Stmt], depth: usize) {
        let pad = "    ".repeat(depth);
        let [Stmt::Store { buffer, offset, value }] = body else { unreachable!("a sort loop's body is one store (`check`)") };
        let v = var.to_string();
        let item_bytes = if self.wide { 16 } else { 8 };
        let (LoopKind::Sort(keep) | LoopKind::ArgSort(keep)) = kind else { unreachable!("a sort loop") };
        let sorted = match kind {
            LoopKind::Sort(_) => "ollie_sort_value(ollie_items[ollie_k])".to_string(),
            _ => format!("({})ollie_sort_index(ollie_items[ollie_k])", self.scalar()),
        };
        let store = self.assign(*buffer, &self.element(*buffer, offset), &sorted);
        if let Keep::First(k) | Keep::Last(k) = keep {
            // A selection: the k lowest (highest) items so far, sorted, each next item kept
            // only if it beats the worst of them; stored at the first (last) k positions. Once
            // k are kept, a block of 16 values that cannot beat the worst — for the lowest, none
            // below it (a later equal value loses on its index), for the highest, all below it
            // (a later equal one wins) — is passed over after one comparison each, which the
            // compiler runs in vector lanes. A NaN fails both tests, so it is always looked at
            // (IEEE comparisons: emitted kernels never set denormals-are-zero).
            let (side, first, worst, beaten) = if matches!(keep, Keep::First(_)) { ("low", 0, k - 1, ">=") } else { ("high", n - k, 0, "<") };
            let (s, x) = (self.scalar(), self.expr(value));
            writeln!(out, "{pad}{{").unwrap();
            writeln!(out, "{pad}    ollie_sort_item ollie_items[{k}];").unwrap();
            writeln!(out, "{pad}    long ollie_kept = 0;").unwrap();
            writeln!(out, "{pad}    for (long ollie_b = 0; ollie_b < {n}; ollie_b += 16) {{").unwrap();
            writeln!(out, "{pad}        long ollie_e = ollie_b + 16 < {n} ? ollie_b + 16 : {n};").unwrap();
            writeln!(out, "{pad}        if (ollie_kept == {k}) {{").unwrap();
            writeln!(out, "{pad}            {s} ollie_worst = ollie_sort_value(ollie_items[{worst}]);").unwrap();
            writeln!(out, "{pad}            int ollie_open = 0;").unwrap();
            writeln!(out, "{pad}            for (long {v} = ollie_b; {v} < ollie_e; {v}++) ollie_open |= !({x} {beaten} ollie_worst);").unwrap();
            writeln!(out, "{pad}            if (!ollie_open) continue;").unwrap();
            writeln!(out, "{pad}        }}").unwrap();
            writeln!(out, "{pad}        for (long {v} = ollie_b; {v} < ollie_e; {v}++) ollie_keep_{side}(ollie_items, &ollie_kept, {k}, ollie_sort_item_of({x}, {v}));").unwrap();
            writeln!(out, "{pad}    }}").unwrap();
            writeln!(out, "{pad}    for (long ollie_k = 0; ollie_k < {k}; ollie_k++) {{ long {v} = {first} + ollie_k; {store} }}").unwrap();
            writeln!(out, "{pad}}}").unwrap();
            return;
        }
        writeln!(out, "{pad}{{").unwrap();
        if 2 * n * item_bytes <= STACK_BYTES {
            writeln!(out, "{pad}    ollie_sort_item ollie_items[{}];", 2 * n).unwrap();
        } else {
            writeln!(out, "{pad}    ollie_sort_item *ollie_items = (ollie_sort_item *)malloc(sizeof(ollie_sort_item) * {});", 2 * n).unwrap();
            writeln!(out, "{pad}    if (!ollie_items) abort();").unwrap();
        }
        writeln!(out, "{pad}    for (long {v} = 0; {v} < {n}; {v}++) ollie_items[{v}] = ollie_sort_item_of({}, {v});", self.expr(value)).unwrap();
        writeln!(out, "{pad}    ollie_sort(ollie_items, ollie_items + {n}, {n});").unwrap();
        writeln!(out, "{pad}    for (long {v} = 0; {v} < {n}; {v}++) {{ long ollie_k = {v}; {store} }}").unwrap();
        if 2 * n * item_bytes > STACK_BYTES {
            writeln!(out, "{pad}    free(ollie_items);").unwrap();
        }
        writeln!(out, "{pad}}}").unwrap();
    }

    /// Whether temporary `id` lives on the heap in a loop that runs on one thread (neither on
    /// threads nor inside a loop that is): then one allocation serves every iteration.
    fn hoisted(&self, id: BufferId) -> bool {
        let b = self.nest.buffer(id);
        b.registers.is_none() && b.bytes() > STACK_BYTES && b.scope.is_some_and(|s| !on_threads(&self.nest.body, s, false))
    }

    /// The body of a loop over `vars` (one, or a parallel loop and those joined to it): the
    /// temporaries living there declared at its start — local variables for those held in
    /// registers, an array on the stack up to [`STACK_BYTES`], else on the heap, freed at its end
    /// (on one thread, allocated once with the kernel's own: see [`Self::hoisted`]).
    fn scoped_temps(&self, out: &mut String, vars: &[VarId], body: &[Stmt], depth: usize) {
        let pad = "    ".repeat(depth);
        let mut heap = Vec::new();
        // Not those no statement touches any more (inlined).
        for (id, b) in self.nest.temps().filter(|(id, b)| b.scope.is_some_and(|s| vars.contains(&s)) && !self.hoisted(*id) && touched(body, *id)) {
            let (t, name) = (self.ctype(b), &self.names[id.0 as usize]);
            if let Some(w) = b.registers {
                let t = if w > 1 { format!("ollie_v{w}") } else { self.scalar().to_string() };
                let locals: Vec<String> = (0..b.len() / w as usize).map(|k| format!("{name}_{k}")).collect();
                writeln!(out, "{pad}{t} {};", locals.join(", ")).unwrap();
            } else if b.bytes() <= STACK_BYTES {
                writeln!(out, "{pad}{t} {name}[{}] __attribute__((aligned(64)));", b.len().max(1)).unwrap();
            } else {
                // A failed allocation cannot be reported through the ABI: the call aborts.
                writeln!(out, "{pad}{t} *{name} = ({t} *)aligned_alloc(64, {});", b.bytes().next_multiple_of(64)).unwrap();
                writeln!(out, "{pad}if (!{name}) abort();").unwrap();
                heap.push(name);
            }
        }
        for s in body {
            self.stmt(out, s, depth);
        }
        for name in heap {
            writeln!(out, "{pad}free({name});").unwrap();
        }
    }

    /// `buffer[offset]` as C: an array element, or the local variable holding it.
    fn element(&self, buffer: BufferId, offset: &Affine) -> String {
        let name = &self.names[buffer.0 as usize];
        match self.nest.buffer(buffer).registers {
            Some(w) => format!("{name}_{}", offset.constant / w as i64),
            None if self.clamped.get() => format!("{name}[ollie_ix({}, {})]", offset, self.nest.buffer(buffer).len()),
            None => format!("{name}[{}]", offset),
        }
    }

    /// A parallel loop and the loops joined to it as one parallel loop over the product of their
    /// extents, each index recovered by division.
    fn joined_loop(&self, out: &mut String, var: VarId, extent: usize, mut body: &[Stmt], depth: usize) {
        let pad = "    ".repeat(depth);
        let mut chain = vec![(var, extent)];
        while let [Stmt::Loop { var, extent, kind: LoopKind::Joined, body: inner }] = body {
            chain.push((*var, *extent));
            body = inner;
        }
        let total: usize = chain.iter().map(|(_, n)| n).product();
        writeln!(out, "{pad}#pragma omp parallel for schedule(static)").unwrap();
        writeln!(out, "{pad}for (long ollie_j = 0; ollie_j < {total}; ollie_j++) {{").unwrap();
        let mut stride = total;
        for (v, n) in &chain {
            stride /= n;
            writeln!(out, "{pad}    long {} = ollie_j / {stride} % {n};", v).unwrap();
        }
        let vars: Vec<VarId> = chain.iter().map(|(v, _)| *v).collect();
        self.scoped_temps(out, &vars, body, depth + 1);
        writeln!(out, "{pad}}}").unwrap();
    }

    fn expr(&self, e: &Expr) -> String {
        let s = self.scalar();
        let f = if self.wide { "" } else { "f" };
        match e {
            Expr::Const(v) => self.literal(*v),
            Expr::Load { buffer, offset } => self.read(*buffer, offset),
            Expr::Gather { buffer, offset, indices } => self.converted(*buffer, format!("{}[{}]", self.names[buffer.0 as usize], self.gather_offset(offset, indices))),
            Expr::Index(a) => format!("({s})({})", a),
            Expr::Unary(op, a) => {
                let a = self.expr(a);
                // The C library's function of the operation's name (`fabs` for `abs`).
                match op {
                    UnaryOp::Neg => format!("(-{a})"),
                    UnaryOp::Abs => format!("fabs{f}({a})"),
                    // Ties to even in the default rounding mode, without `rint`'s inexact flag.
                    UnaryOp::Round => format!("nearbyint{f}({a})"),
                    _ => format!("{}{f}({a})", op.name()),
                }
            }
            Expr::Binary(op, a, b) => {
                let (a, b) = (self.expr(a), self.expr(b));
                match op {
                    BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div => format!("({a} {} {b})", arithmetic(*op).expect("arithmetic")),
                    BinaryOp::Pow => format!("pow{f}({a}, {b})"),
                    BinaryOp::Max => format!("ollie_max({a}, {b})"),
                    // Integers held in floats (exact below 2^24 in float32): the quotient
                    // of two of them rounds to an integer only where it is one.
                    BinaryOp::FloorDiv => format!("({b} != 0 ? floor{f}({a} / {b}) : 0)"),
                    BinaryOp::Mod => format!("({b} != 0 ? {a} - {b} * floor{f}({a} / {b}) : 0)"),
                    BinaryOp::Min => format!("ollie_min({a}, {b})"),
                }
            }
            Expr::Compare(op, a, b) => {
                let c = comparison(*op);
                // Index masks (tril, causal attention) compare in integers: exact, cheaper, and
                // clear of gcc 12's wrong vector code for float compares of converted indices
                // under AVX-512VL+DQ.
                let (a, b) = match (integral(a), integral(b)) {
                    (Some(a), Some(b)) => (a, b),
                    _ => (self.expr(a), self.expr(b)),
                };
                format!("({a} {c} {b} ? {} : {})", self.literal(1.0), self.literal(0.0))
            }
            Expr::Select(c, a, b) => {
                format!("({} != {} ? {} : {})", self.expr(c), self.literal(0.0), self.expr(a), self.expr(b))
            }
            // C evaluates only the arm taken: the loads inside never run out of range.
            Expr::Within { index, lo, hi, inside, outside } => {
                format!("((unsigned long)(({index}) - ({lo})) < {}ul ? {} : {})", (hi - lo).max(0), self.expr(inside), self.expr(outside))
            }
            Expr::Cast(dtype, a) => {
                let a = self.expr(a);
                match dtype {
                    DType::Bool => format!("({a} != {} ? {} : {})", self.literal(0.0), self.literal(1.0), self.literal(0.0)),
                    DType::I64 | DType::I32 => format!("trunc{f}({a})"),
                    // numpy's conversion on x86: through int32, keeping the low byte.
                    DType::I8 => format!("({s})(int8_t)(int32_t)({a})"),
                    DType::U8 => format!("({s})(uint8_t)(int32_t)({a})"),
                    DType::F32 if self.wide => format!("({s})(float)({a})"),
                    DType::F32 | DType::F64 => a,
                    // A cast to a 16-bit float rounds to it (the kernel goes on in float32).
                    DType::F16 => format!("ollie_f16_f32(ollie_f32_f16({a}))"),
                    DType::BF16 => format!("ollie_bf16_f32(ollie_f32_bf16({a}))"),
                }
            }
        }
    }

    /// Types and helpers for `w`-lane vectors of the compute type (GCC vector extensions).
    fn vector_helpers(&self, w: u32) -> String {
        let s = self.scalar();
        let (bytes, mask) = if self.wide { (8, "long long") } else { (4, "int") };
        let size = bytes * w;
        let splat = vec!["x"; w as usize].join(", ");
        let select = "return (V)((m & (M)a) | (~m & (M)b));";
        // Every other element from `p`: two loads overlapping by one element, so that only the
        // elements wanted and those between them are read.
        let even: Vec<String> = (0..w / 2).map(|l| (2 * l).to_string()).chain((0..w / 2).map(|l| (w + 1 + 2 * l).to_string())).collect();
        let even = even.join(", ");
        let text = format!(
            "typedef {s} V __attribute__((vector_size({size})));\n\
             typedef {mask} M __attribute__((vector_size({size})));\n\
             static inline V ollie_splatW({s} x) {{ V v = {{{splat}}}; return v; }}\n\
             static inline V ollie_loadW(const {s} *p) {{ V v; __builtin_memcpy(&v, p, sizeof v); return v; }}\n\
             static inline V ollie_evenW(const {s} *p) {{ V lo = ollie_loadW(p), hi = ollie_loadW(p + W - 1); return __builtin_shuffle(lo, hi, (M){{{even}}}); }}\n\
             static inline void ollie_storeW({s} *p, V v) {{ __builtin_memcpy(p, &v, sizeof v); }}\n\
             static inline V ollie_selW(V c, V a, V b) {{ M m = c != (V){{0}}; {select} }}\n\
             static inline V ollie_blendW(M m, V a, V b) {{ {select} }}\n\
             static inline V ollie_vmaxW(V a, V b) {{ M m = (a != a) | (~(b != b) & (a > b)); {select} }}\n\
             static inline V ollie_vminW(V a, V b) {{ M m = (a != a) | (~(b != b) & (a < b)); {select} }}\n\n"
        );
        text.replace('V', &format!("ollie_v{w}")).replace('M', &format!("ollie_m{w}")).replace('W', &w.to_string())
    }

    /// `ollie_reduce_{op}{w}`: a vector's lanes reduced to a scalar by `op` in a tree (halves
    /// combined, log2(w) shuffles).
    fn reduce_helper(&self, op: BinaryOp, w: u32) -> String {
        let s = self.scalar();
        let mut text = format!("static inline {s} ollie_reduce_{}{w}(ollie_v{w} v) {{\n", lane_reduction(op));
        let mut half = w / 2;
        while half >= 1 {
            let lanes: Vec<String> = (0..w).map(|l| ((l + half) % w).to_string()).collect();
            let shuffled = format!("__builtin_shuffle(v, (ollie_m{w}){{{}}})", lanes.join(", "));
            let combined = match arithmetic(op) {
                Some(symbol) => format!("v {symbol} {shuffled}"),
                None => format!("ollie_v{}{w}(v, {shuffled})", lane_reduction(op)),
            };
            text.push_str(&format!("    v = {combined};\n"));
            half /= 2;
        }
        text.push_str("    return v[0];\n}\n\n");
        text
    }

    /// A loop run `w` iterations at a time in vectors, then one at a time for the rest (both
    /// with constant bounds, and the tail only when `w` does not divide the extent). With
    /// `stream`, its contiguous vector stores to outputs the kernel never reads bypass the
    /// caches, then a fence.
    fn vector_loop(&self, out: &mut String, var: VarId, extent: usize, w: u32, stream: bool, body: &[Stmt], depth: usize) {
        let pad = "    ".repeat(depth);
        let v = var.to_string();
        let main = extent - extent % w as usize;
        if main > 0 {
            writeln!(out, "{pad}for (long {v} = 0; {v} < {main}; {v} += {w}) {{").unwrap();
            for stmt in body {
                self.vector_stmt(out, stmt, var, w, stream, &[], depth + 1);
            }
            writeln!(out, "{pad}}}").unwrap();
            if stream {
                fence(out, &pad);
            }
        }
        if main < extent {
            writeln!(out, "{pad}for (long {v} = {main}; {v} < {extent}; {v}++) {{").unwrap();
            for s in body {
                self.stmt(out, s, depth + 1);
            }
            writeln!(out, "{pad}}}").unwrap();
        }
    }

    /// One statement of a vector loop over `var`, for its lanes `var .. var + w`; the loads in
    /// `transposed` read from the registers named with them.
    #[allow(clippy::too_many_arguments)]
    fn vector_stmt(&self, out: &mut String, stmt: &Stmt, var: VarId, w: u32, stream: bool, transposed: &[Transposed], depth: usize) {
        let pad = "    ".repeat(depth);
        let Stmt::Store { buffer, offset, value } = stmt else {
            // A prefetch at the vector's first lane (one per line at 16 floats).
            let Stmt::Prefetch { .. } = stmt else { unreachable!("vectorized loops are innermost") };
            self.stmt(out, stmt, depth);
            return;
        };
        let name = &self.names[buffer.0 as usize];
        if offset.coefficient(var) == 0 {
            // A reduction into one element (the only store `vectorize` lets stay put):
            // the vector's lanes reduced by a tree, then into the element.
            let Expr::Binary(op, _, e) = value else { unreachable!("vectorize checked the reduction") };
            let target = self.read(*buffer, offset);
            let lanes = format!("ollie_reduce_{}{w}({})", lane_reduction(*op), self.vector_expr(e, var, w, transposed));
            let combined = match arithmetic(*op) {
                Some(symbol) => format!("{target} {symbol} {lanes}"),
                None => format!("ollie_{}({target}, {lanes})", lane_reduction(*op)),
            };
            writeln!(out, "{pad}{}", self.assign(*buffer, &self.element(*buffer, offset), &combined)).unwrap();
            return;
        }
        let value = self.vector_expr(self.stored(*buffer, value), var, w, transposed);
        let streamed = stream && matches!(self.nest.buffer(*buffer).kind, BufferKind::Output(_)) && !self.read.contains(buffer);
        // 16-bit floats are stored by vector conversions in float kernels, lane by lane in
        // double ones.
        let (half, double_half) = match self.half(*buffer) {
            Some(h) if !self.wide => (Some(h), false),
            h => (None, h.is_some()),
        };
        match offset.coefficient(var) {
            1 if self.nest.buffer(*buffer).registers.is_some() => writeln!(out, "{pad}{} = {value};", self.element(*buffer, offset)).unwrap(),
            1 if half.is_some() => {
                let how = if streamed { "stream" } else { "store" };
                writeln!(out, "{pad}ollie_v{how}_{}{w}(&{name}[{}], {value});", half.expect("checked"), offset).unwrap()
            }
            1 if streamed && !double_half => writeln!(out, "{pad}ollie_vstream{w}(&{name}[{}], {value});", offset).unwrap(),
            1 if !double_half => writeln!(out, "{pad}ollie_store{w}(&{name}[{}], {value});", offset).unwrap(),
            c => {
                writeln!(out, "{pad}{{ ollie_v{w} ollie_lanes = {value};").unwrap();
                for lane in 0..w as i64 {
                    let lvalue = format!("{name}[{}]", offset.add_scaled(&Affine::constant(c * lane), 1));
                    writeln!(out, "{pad}  {}", self.assign(*buffer, &lvalue, &format!("ollie_lanes[{lane}]"))).unwrap();
                }
                writeln!(out, "{pad}}}").unwrap();
            }
        }
    }

    /// The block a register transpose serves, when `body` (that of a serial loop over `outer`)
    /// is one vector loop of `w` lanes, `outer`'s extent a multiple of `w`, and some load of it
    /// runs along `outer` and strides across the lanes (a transposed read: `x[j][i]` vectorized
    /// along `i`). The loads gathered lane by lane become `w` contiguous loads of `w` elements
    /// along `outer`, transposed in registers, one vector for each of `w` steps of `outer`.
    ///
    /// That runs the two loops' iterations in another order, so only where no iteration reads
    /// what another writes: every statement stores contiguously along the lanes, each to its
    /// own buffer, each element once in the block (the store's step along `outer` at least the
    /// vector loop's extent), and reads a buffer stored in the block only at the element its
    /// own iteration stores; no temporary held in registers.
    fn transposed<'b>(&self, outer: VarId, outer_extent: usize, body: &'b [Stmt]) -> Option<TransposedBlock<'b>> {
        let [Stmt::Loop { var, extent, kind: kind @ (LoopKind::Vector(w) | LoopKind::Stream(w)), body }] = body else { return None };
        let (var, extent, w, stream) = (*var, *extent, *w, matches!(kind, LoopKind::Stream(_)));
        if w < 2 || !w.is_power_of_two() || !outer_extent.is_multiple_of(w as usize) || extent < w as usize {
            return None;
        }
        let mut stored: Vec<(BufferId, &Affine)> = Vec::new();
        for s in body {
            let Stmt::Store { buffer, offset, .. } = s else { return None };
            let registers = self.nest.buffer(*buffer).registers.is_some();
            if registers || offset.coefficient(var) != 1 || offset.coefficient(outer).unsigned_abs() < extent as u64 || stored.iter().any(|(b, _)| b == buffer) {
                return None;
            }
            stored.push((*buffer, offset));
        }
        let mut loads = Vec::new();
        for s in body {
            let Stmt::Store { value, .. } = s else { unreachable!("checked above") };
            let mut all = Vec::new();
            value.guarded_loads(&mut all);
            if !all.is_empty() {
                return None;
            }
            value.every_load(&mut all);
            for (buffer, offset) in all {
                if self.nest.buffer(buffer).registers.is_some() {
                    return None;
                }
                if let Some((_, at)) = stored.iter().find(|(b, _)| *b == buffer) {
                    if **at != offset {
                        return None;
                    }
                    continue;
                }
                let across = offset.coefficient(var);
                if offset.coefficient(outer) == 1 && across != 0 && across != 1 && !loads.contains(&(buffer, offset.clone())) {
                    loads.push((buffer, offset));
                }
            }
        }
        if loads.is_empty() {
            return None;
        }
        let loads = loads.into_iter().enumerate().map(|(k, (buffer, offset))| Transposed { buffer, offset, name: format!("ollie_tr{k}") }).collect();
        Some(TransposedBlock { outer, outer_extent, var, extent, w, stream, body, loads })
    }

    /// A serial loop around a vector loop, as [`Self::transposed`] found it, run in blocks of
    /// `w` steps of `outer`: for each, the transposed loads read in rows and transposed in
    /// registers, `w` × `w` at a time, for every vector of lanes; then the `w` steps of `outer`,
    /// each over all the vectors (a store's vectors in order, so that streamed stores fill
    /// whole cache lines); the lanes the vectors leave over one at a time.
    fn transposed_loop(&self, out: &mut String, block: &TransposedBlock, depth: usize) {
        let pad = "    ".repeat(depth);
        let TransposedBlock { outer, outer_extent, var, extent, w, stream, body, loads } = block;
        let (o, v) = (outer.to_string(), var.to_string());
        let main = extent - extent % *w as usize;
        let vectors = main / *w as usize;
        writeln!(out, "{pad}for (long ollie_{o} = 0; ollie_{o} < {outer_extent}; ollie_{o} += {w}) {{").unwrap();
        for t in loads {
            writeln!(out, "{pad}    ollie_v{w} {}[{vectors}][{w}];", t.name).unwrap();
        }
        writeln!(out, "{pad}    for (long {v} = 0; {v} < {main}; {v} += {w}) {{").unwrap();
        writeln!(out, "{pad}        long {o} = ollie_{o};").unwrap();
        for t in loads {
            for lane in 0..*w as i64 {
                let row = t.offset.substitute(*var, &Affine::var(*var).add_scaled(&Affine::constant(lane), 1));
                writeln!(out, "{pad}        {}[{v} / {w}][{lane}] = {};", t.name, self.vector_load(t.buffer, &row.to_string(), *w)).unwrap();
            }
            writeln!(out, "{pad}        ollie_transpose{w}({}[{v} / {w}]);", t.name).unwrap();
        }
        writeln!(out, "{pad}    }}").unwrap();
        writeln!(out, "{pad}    for (long ollie_k = 0; ollie_k < {w}; ollie_k++) {{").unwrap();
        writeln!(out, "{pad}        long {o} = ollie_{o} + ollie_k;").unwrap();
        writeln!(out, "{pad}        for (long {v} = 0; {v} < {main}; {v} += {w}) {{").unwrap();
        let rows: Vec<Transposed> = loads.iter().map(|t| Transposed { name: format!("{}[{v} / {w}][ollie_k]", t.name), ..t.clone() }).collect();
        for s in *body {
            self.vector_stmt(out, s, *var, *w, *stream, &rows, depth + 3);
        }
        writeln!(out, "{pad}        }}").unwrap();
        writeln!(out, "{pad}    }}").unwrap();
        if main < *extent {
            writeln!(out, "{pad}    for (long {o} = ollie_{o}; {o} < ollie_{o} + {w}; {o}++) {{").unwrap();
            writeln!(out, "{pad}        for (long {v} = {main}; {v} < {extent}; {v}++) {{").unwrap();
            for s in *body {
                self.stmt(out, s, depth + 3);
            }
            writeln!(out, "{pad}        }}").unwrap();
            writeln!(out, "{pad}    }}").unwrap();
        }
        writeln!(out, "{pad}}}").unwrap();
        if *stream {
            fence(out, &pad);
        }
    }

    /// `e` for lanes `var + 0 .. var + w`: native vector arithmetic where GCC has it, vector math
    /// (`vector_math.c`) for float exp, log, tanh, sqrt, fabs and powers 2 to 4, values that do
    /// not move with `var` broadcast, anything else built lane by lane from the scalar form.
    ///
    /// An invariant that calls the math library is vector math too, on broadcast operands, where
    /// vector math computes all of it: pure code that GCC hoists out of the loop, where a libm
    /// call (`logf` of a row's sum, in a log-softmax) would stay in it, once per vector, for the
    /// `errno` it may set.
    fn vector_expr(&self, e: &Expr, var: VarId, w: u32, transposed: &[Transposed]) -> String {
        if !e.depends_on(var) && (self.wide || invariant_math(e) != Some(true)) {
            return format!("ollie_splat{w}({})", self.expr(e));
        }
        let v = |x: &Expr| self.vector_expr(x, var, w, transposed);
        if let Some(t) = transposed.iter().find(|t| matches!(e, Expr::Load { buffer, offset } if t.buffer == *buffer && t.offset == *offset)) {
            return t.name.clone();
        }
        match e {
            Expr::Load { buffer, offset } if offset.coefficient(var) == 1 && self.nest.buffer(*buffer).registers.is_some() => self.element(*buffer, offset),
            // 16-bit floats in a double kernel, and integers, are read lane by lane (below).
            Expr::Load { buffer, offset } if offset.coefficient(var) == 1 && (self.half(*buffer).is_none() || !self.wide) && !self.integer(*buffer) => self.vector_load(*buffer, &offset.to_string(), w),
            // A row gathered at indices that do not move with the lanes (an embedding's row):
            // contiguous.
            Expr::Gather { buffer, offset, indices }
                if offset.coefficient(var) == 1 && !indices.iter().any(|d| d.value.depends_on(var)) && (self.half(*buffer).is_none() || !self.wide) && !self.integer(*buffer) =>
            {
                self.vector_load(*buffer, &self.gather_offset(offset, indices), w)
            }
            // Every other element (a 2 x 2 pool's columns, interleaved pairs): two loads and a
            // shuffle, not a lane-by-lane gather.
            Expr::Load { buffer, offset } if offset.coefficient(var) == 2 && w >= 2 && self.nest.buffer(*buffer).registers.is_none() && self.half(*buffer).is_none() => format!("ollie_even{w}(&{}[{}])", self.names[buffer.0 as usize], offset),
            // An index (`arange`, an argmax's position) as integer lanes converted at once: the
            // scalar form's value in each lane.
            Expr::Index(_) => format!("__builtin_convertvector({}, ollie_v{w})", self.vector_integral(e, var, w).expect("an index is integral")),
            Expr::Unary(UnaryOp::Neg, a) => format!("(-{})", v(a)),
            Expr::Binary(op, a, b) if arithmetic(*op).is_some() => format!("({} {} {})", v(a), arithmetic(*op).expect("checked"), v(b)),
            Expr::Binary(BinaryOp::Max, a, b) => format!("ollie_vmax{w}({}, {})", v(a), v(b)),
            Expr::Binary(BinaryOp::Min, a, b) => format!("ollie_vmin{w}({}, {})", v(a), v(b)),
            // A condition that is a comparison (or an `or`, `and` of them) selects by its mask
            // as it is, not by a 0.0/1.0 vector compared with zero again.
            Expr::Select(c, a, b) => match self.vector_mask(c, var, w, transposed) {
                Some(m) => format!("ollie_blend{w}({m}, {}, {})", v(a), v(b)),
                None => format!("ollie_sel{w}({}, {}, {})", v(c), v(a), v(b)),
            },
            // A guard the same for every lane picks one vector form; one that moves with the
            // lanes is taken lane by lane (below), each lane reading only where it holds.
            Expr::Within { index, lo, hi, inside, outside } if index.coefficient(var) == 0 => {
                format!("((unsigned long)(({index}) - ({lo})) < {}ul ? {} : {})", (hi - lo).max(0), v(inside), v(outside))
            }
            // A comparison's mask lanes are -1 or 0 as integers: negated and converted, 1.0 or 0.0.
            Expr::Compare(..) => format!("__builtin_convertvector(-{}, ollie_v{w})", self.vector_mask(e, var, w, transposed).expect("a comparison is a mask")),
            // Between float types in a float kernel, a conversion is no conversion (as in the
            // scalar form).
            Expr::Cast(DType::F32 | DType::F64, a) if !self.wide => v(a),
            Expr::Cast(DType::F16, a) if !self.wide => format!("ollie_vround_f16{w}({})", v(a)),
            Expr::Cast(DType::BF16, a) if !self.wide => format!("ollie_vround_bf16{w}({})", v(a)),
            // Float vectors get vector math; double ones go lane by lane.
            Expr::Unary(
                op @ (UnaryOp::Exp
                | UnaryOp::Log
                | UnaryOp::Log1p
                | UnaryOp::Expm1
                | UnaryOp::Tanh
                | UnaryOp::Sin
                | UnaryOp::Cos
                | UnaryOp::Sqrt
                | UnaryOp::Abs
                | UnaryOp::Floor
                | UnaryOp::Ceil
                | UnaryOp::Round
                | UnaryOp::Erf),
                a,
            ) if !self.wide => format!("ollie_v{}{w}({})", op.name(), v(a)),
            // A small integer power by multiplication (powf itself stays scalar).
            Expr::Binary(BinaryOp::Pow, a, b) if !self.wide && matches!(**b, Expr::Const(n) if n.fract() == 0.0 && (2.0..=4.0).contains(&n)) => {
                let Expr::Const(n) = **b else { unreachable!("matched above") };
                format!("ollie_vpowi{w}({}, {})", v(a), n as i32)
            }
            _ => {
                let lanes: Vec<String> = (0..w as i64)
                    .map(|lane| self.expr(&e.map_affine(&|a| a.substitute(var, &Affine::var(var).add_scaled(&Affine::constant(lane), 1)))))
                    .collect();
                format!("((ollie_v{w}){{{}}})", lanes.join(", "))
            }
        }
    }

    /// Condition `e` (0 or 1 in each lane) as a lane mask (−1 where it holds): a comparison as
    /// it compares (index masks, a causal mask's `j >= i + 1`, compare integer vectors, as the
    /// scalar form compares integers), the `max` and `min` of conditions (or, and) as `|`, `&`
    /// of their masks; `None` for any other expression.
    fn vector_mask(&self, e: &Expr, var: VarId, w: u32, transposed: &[Transposed]) -> Option<String> {
        let mask = |x: &Expr| self.vector_mask(x, var, w, transposed);
        match e {
            Expr::Compare(op, a, b) => {
                let (a, b) = match (self.vector_integral(a, var, w), self.vector_integral(b, var, w)) {
                    (Some(a), Some(b)) => (a, b),
                    _ => (self.vector_expr(a, var, w, transposed), self.vector_expr(b, var, w, transposed)),
                };
                Some(format!("({a} {} {b})", comparison(*op)))
            }
            Expr::Binary(BinaryOp::Max, a, b) => Some(format!("({} | {})", mask(a)?, mask(b)?)),
            Expr::Binary(BinaryOp::Min, a, b) => Some(format!("({} & {})", mask(a)?, mask(b)?)),
            _ => None,
        }
    }

    /// `e` as a vector of the mask type's integers (lane `l` at `var + l`), when its value is an
    /// integer computed from indices and integral constants, affine in the indices (so that the
    /// lanes step evenly, from lane 0's scalar value); a product only by a constant.
    fn vector_integral(&self, e: &Expr, var: VarId, w: u32) -> Option<String> {
        let int = if self.wide { "long long" } else { "int" };
        let vi = |x: &Expr| self.vector_integral(x, var, w);
        match e {
            Expr::Index(a) => {
                let steps: Vec<String> = (0..w as i64).map(|l| (l * a.coefficient(var)).to_string()).collect();
                Some(format!("((ollie_m{w}){{{}}} + ({int})({}))", steps.join(", "), a))
            }
            Expr::Const(c) if c.fract() == 0.0 && c.abs() < 1e9 => Some(format!("((ollie_m{w}){{0}} + ({int})({}))", *c as i64)),
            Expr::Unary(UnaryOp::Neg, a) => Some(format!("(-{})", vi(a)?)),
            Expr::Binary(op @ (BinaryOp::Add | BinaryOp::Sub), a, b) => Some(format!("({} {} {})", vi(a)?, arithmetic(*op).expect("arithmetic"), vi(b)?)),
            Expr::Binary(BinaryOp::Mul, a, b) if matches!(**a, Expr::Const(_)) || matches!(**b, Expr::Const(_)) => Some(format!("({} * {})", vi(a)?, vi(b)?)),
            _ => None,
        }
    }

    fn literal(&self, v: f64) -> String {
        let f = if self.wide { "" } else { "f" };
        if v.is_nan() {
            "NAN".to_string()
        } else if v.is_infinite() {
            if v > 0.0 { "INFINITY".to_string() } else { "(-INFINITY)".to_string() }
        } else {
            let text = format!("{v:?}");
            let text = if text.contains(['.', 'e']) { text } else { format!("{text}.0") };
            if v < 0.0 { format!("({text}{f})") } else { format!("{text}{f}") }
        }
    }
}

/// A store fence after a loop of streamed stores: they are weakly ordered, and are fenced before
/// anyone reads the output.
fn fence(out: &mut String, pad: &str) {
    writeln!(out, "#if defined(__SSE__)\n{pad}__builtin_ia32_sfence();\n#endif").unwrap();
}

/// `ollie_transpose{w}(r)`: the `w` × `w` matrix of `w` vectors transposed in place, in log2(w)
/// stages of two-source shuffles (stage `b` swaps, in each pair of rows `b` apart, the upper
/// lanes of each block of `2b` in the first with the lower lanes in the second): `w` shuffles a
/// stage, none through memory.
fn transpose_helper(w: u32) -> String {
    let mut text = format!("static inline void ollie_transpose{w}(ollie_v{w} *r) {{\n");
    let mut b = 1;
    while b < w {
        let first: Vec<String> = (0..w).map(|l| if l & b != 0 { w + l - b } else { l }.to_string()).collect();
        let second: Vec<String> = (0..w).map(|l| if l & b != 0 { w + l } else { l + b }.to_string()).collect();
        writeln!(text, "    for (int i = 0; i < {w}; i++) {{").unwrap();
        writeln!(text, "        if (i & {b}) continue;").unwrap();
        writeln!(text, "        ollie_v{w} a = r[i], c = r[i + {b}];").unwrap();
        writeln!(text, "        r[i] = __builtin_shuffle(a, c, (ollie_m{w}){{{}}});", first.join(", ")).unwrap();
        writeln!(text, "        r[i + {b}] = __builtin_shuffle(a, c, (ollie_m{w}){{{}}});", second.join(", ")).unwrap();
        text.push_str("    }\n");
        b *= 2;
    }
    text.push_str("}\n\n");
    text
}

/// How `vector_expr` computes `e` when nothing in it moves with the vector loop: `None` when some
/// part of it has no vector form (it is then built lane by lane), else whether it calls a math
/// function (exp, log, tanh, sin, cos, sqrt).
fn invariant_math(e: &Expr) -> Option<bool> {
    match e {
        Expr::Const(_) | Expr::Load { .. } | Expr::Index(_) | Expr::Gather { .. } => Some(false),
        Expr::Unary(UnaryOp::Exp | UnaryOp::Log | UnaryOp::Tanh | UnaryOp::Sin | UnaryOp::Cos | UnaryOp::Sqrt | UnaryOp::Erf | UnaryOp::Atan, a) => invariant_math(a).map(|_| true),
        Expr::Unary(UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round, a) => invariant_math(a),
        Expr::Binary(BinaryOp::Pow, a, b) if matches!(**b, Expr::Const(n) if n.fract() == 0.0 && (2.0..=4.0).contains(&n)) => invariant_math(a),
        Expr::Binary(op, a, b) if arithmetic(*op).is_some() || matches!(op, BinaryOp::Max | BinaryOp::Min) => Some(invariant_math(a)? | invariant_math(b)?),
        Expr::Select(c, a, b) => Some(invariant_math(c)? | invariant_math(a)? | invariant_math(b)?),
        _ => None,
    }
}

/// C's operator for a comparison, which scalars and GCC vectors share.
fn comparison(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Lt => "<",
        CmpOp::Le => "<=",
        CmpOp::Gt => ">",
        CmpOp::Ge => ">=",
        CmpOp::Eq => "==",
        CmpOp::Ne => "!=",
    }
}

/// C's operator for the four arithmetic operations, which scalars and GCC vectors share.
/// The name of a reduction `vectorize` runs in lanes (`ollie_reduce_{name}{w}`, and the scalar
/// `ollie_max`/`ollie_min` for the last step).
fn lane_reduction(op: BinaryOp) -> &'static str {
    match op {
        BinaryOp::Add => "add",
        BinaryOp::Mul => "mul",
        BinaryOp::Max => "max",
        BinaryOp::Min => "min",
        BinaryOp::Sub | BinaryOp::Div | BinaryOp::Pow | BinaryOp::FloorDiv | BinaryOp::Mod => unreachable!("vectorize reduces lanes by sums, products, maxima and minima only"),
    }
}

fn arithmetic(op: BinaryOp) -> Option<&'static str> {
    match op {
        BinaryOp::Add => Some("+"),
        BinaryOp::Sub => Some("-"),
        BinaryOp::Mul => Some("*"),
        BinaryOp::Div => Some("/"),
        BinaryOp::Pow | BinaryOp::Max | BinaryOp::Min | BinaryOp::FloorDiv | BinaryOp::Mod => None,
    }
}

fn vector_widths(body: &[Stmt], out: &mut Vec<u32>) {
    for s in body {
        if let Stmt::Loop { kind, body, .. } = s {
            if let LoopKind::Vector(w) | LoopKind::Stream(w) = kind {
                out.push(*w);
            }
            vector_widths(body, out);
        }
    }
}

/// `sort.c` for a kernel computing in double (`wide`) or in float: the part between `#if
/// {WIDE}` and `#else`, or the one after it.
fn sort_helpers(wide: bool) -> String {
    let text = include_str!("sort.c");
    let (head, rest) = text.split_once("#if {WIDE}\n").expect("sort.c has its two variants");
    let (double, rest) = rest.split_once("#else\n").expect("sort.c has its two variants");
    let (float, tail) = rest.split_once("#endif\n").expect("sort.c has its two variants");
    format!("{head}{}{tail}", if wide { double } else { float })
}

/// What `vector_math.c` defines, `ollie_v{name}{w}`: the emitter includes it where it calls one.
const VECTOR_MATH: [&str; 23] = ["exp", "log", "log1p", "expm1", "tanh", "sin", "cos", "sqrt", "abs", "floor", "ceil", "rint", "erf", "powi", "stream", "stream_f16", "stream_bf16", "load_f16", "store_f16", "load_bf16", "store_bf16", "round_f16", "round_bf16"];

/// Scalar conversions between float32 and the 16-bit floats, rounding to nearest even as numpy
/// and ml_dtypes do (NaN kept and quieted, subnormals rounded, not flushed); float16 through
/// `_Float16` (F16C's instructions where the target has them).
/// A gather's index `i` into an axis of `n`: counted from the end when negative (numpy's
/// meaning), then clamped into the axis, so that an index outside the contract reads some
/// element of it rather than outside the buffer.
const GATHER_INDEX: &str = "static inline long ollie_ix(long i, long n) { i += i < 0 ? n : 0; return i < 0 ? 0 : i >= n ? n - 1 : i; }\n\n";

const HALF_CONVERSIONS: &str = "static inline float ollie_bf16_f32(uint16_t h) { uint32_t u = (uint32_t)h << 16; float f; __builtin_memcpy(&f, &u, 4); return f; }\n\
static inline uint16_t ollie_f32_bf16(float f) { uint32_t u; __builtin_memcpy(&u, &f, 4); return (u & 0x7fffffffu) > 0x7f800000u ? (uint16_t)((u >> 16) | 0x40) : (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16); }\n\
static inline float ollie_f16_f32(uint16_t h) { _Float16 x; __builtin_memcpy(&x, &h, 2); return (float)x; }\n\
static inline uint16_t ollie_f32_f16(float f) { _Float16 x = (_Float16)f; uint16_t h; __builtin_memcpy(&h, &x, 2); return h; }\n\n";

/// The vector math functions for `w`-lane float vectors (`ollie_v{f}{w}` for each `f` of
/// `VECTOR_MATH`: exp, log, log1p, expm1, tanh, sin, cos, sqrt, abs, floor, ceil, small
/// powers), the streaming store `ollie_vstream{w}` and the 16-bit loads and stores, in C; they
/// need the types `ollie_v{w}` (float lanes) and `ollie_m{w}` (int lanes) declared before them.
pub fn vector_math(w: u32) -> String {
    include_str!("vector_math.c").replace("{W}", &w.to_string())
}

/// The scalar conversions between float32 and float16 or bfloat16 (`ollie_f16_f32`,
/// `ollie_f32_bf16`, ...) that kernels with 16-bit buffers use, in C (after `<stdint.h>`).
pub fn half_conversions() -> &'static str {
    HALF_CONVERSIONS
}

/// Names the lowering generates for loop variables and temporaries.
fn is_generated_name(name: &str) -> bool {
    let rest = name.strip_prefix('i').or_else(|| name.strip_prefix('t'));
    rest.is_some_and(|r| !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit())) || name == "out" || name == "done"
        || name.strip_prefix("out").is_some_and(|r| r.bytes().all(|b| b.is_ascii_digit()))
}

/// `e` as a C expression of type `long`, when its value is an integer computed exactly from
/// indices and integral constants (no overflow: indices and constants stay far below 2⁵³).
fn integral(e: &Expr) -> Option<String> {
    match e {
        Expr::Index(a) => Some(format!("({})", a)),
        Expr::Const(c) if c.fract() == 0.0 && c.abs() < 1e15 => Some(format!("{}L", *c as i64)),
        Expr::Unary(UnaryOp::Neg, a) => Some(format!("(-{})", integral(a)?)),
        Expr::Binary(op @ (BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul), a, b) => {
            Some(format!("({} {} {})", integral(a)?, arithmetic(*op).expect("arithmetic"), integral(b)?))
        }
        _ => None,
    }
}

/// Whether loop `var` runs on threads or inside a loop that does (`inside`: a loop around the
/// statements of `body` does).
fn on_threads(body: &[Stmt], var: VarId, inside: bool) -> bool {
    body.iter().any(|s| match s {
        Stmt::Loop { var: v, kind, body, .. } => {
            let threads = inside || matches!(kind, LoopKind::Parallel | LoopKind::Joined);
            if *v == var {
                threads
            } else {
                on_threads(body, var, threads)
            }
        }
        _ => false,
    })
}

/// Whether a statement of `body` touches buffer `id`.
fn touched(body: &[Stmt], id: BufferId) -> bool {
    let mut at = Vec::new();
    body.iter().for_each(|s| s.accesses(id, &mut at));
    !at.is_empty()
}
