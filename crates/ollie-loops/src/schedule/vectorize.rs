//! `simd v` and `vectorize v w`: an innermost loop's iterations run in SIMD lanes — OpenMP
//! `simd`, or explicit GCC vector types `w` iterations at a time with a scalar tail. Legal when
//! the iterations are independent, as for `parallel`.

use ollie_graph::DType;

use super::deps::{collect, independent};
use super::{ScheduleError, Site};
use crate::ir::{LoopKind, Stmt};

/// Marks the loop `kind` (`Simd` or `Vector(width)`) after the checks.
pub(crate) fn lanes(site: &mut Site, kind: LoopKind) -> Result<(), ScheduleError> {
    let (var, extent, _, body) = site.loop_ref();
    if body.iter().any(|s| matches!(s, Stmt::Loop { .. })) {
        return Err(site.illegal("only an innermost loop runs in SIMD lanes"));
    }
    independent(var, extent, body, site.buffers).map_err(|r| site.illegal(&r))?;
    if let LoopKind::Vector(width) = kind {
        if !matches!(width, 2 | 4 | 8 | 16) {
            return Err(site.illegal("the vector width must be 2, 4, 8 or 16"));
        }
        if width as usize > extent {
            return Err(site.illegal("the loop has fewer iterations than vector lanes"));
        }
        site.no_temporary_lives_in(var)?;
        let (mut stores, mut loads) = (Vec::new(), Vec::new());
        collect(body, &mut Vec::new(), &mut stores, &mut loads);
        // Vectors hold the kernel's compute type; a buffer of another C type would need
        // conversions the emitter does not make.
        if stores.iter().chain(&loads).any(|(b, _)| (site.buffers[b.0 as usize].dtype == DType::F64) != site.wide) {
            return Err(site.illegal("the loop touches buffers of another floating-point type"));
        }
    }
    *site.the_loop().2 = kind;
    Ok(())
}
