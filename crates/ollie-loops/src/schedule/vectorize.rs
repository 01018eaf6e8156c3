//! `simd v` and `vectorize v w`: an innermost loop's iterations run in SIMD lanes — OpenMP
//! `simd`, or explicit GCC vector types `w` iterations at a time with a scalar tail. Legal when
//! the iterations are independent, as for `parallel`; `vectorize` also takes a reduction into
//! one element (`a[k] = op(a[k], e)`, a sum, product, maximum or minimum): each vector's lanes
//! are reduced by a tree, then into the element — reassociation, as `accumulators` makes.

use ollie_graph::{BinaryOp, DType};

use super::accumulators::reduction;
use super::deps::{collect, independent};
use super::{ScheduleError, Site};
use crate::ir::{LoopKind, Stmt};

/// Marks the loop `kind` (`Simd` or `Vector(width)`) after the checks.
pub(crate) fn lanes(site: &mut Site, kind: LoopKind) -> Result<(), ScheduleError> {
    let (var, extent, _, body) = site.loop_ref();
    if body.iter().any(|s| matches!(s, Stmt::Loop { .. })) {
        return Err(site.illegal("only an innermost loop runs in SIMD lanes"));
    }
    if let Err(why) = independent(var, extent, body, site.buffers) {
        let lane_reduction = matches!(kind, LoopKind::Vector(_)) && reduction(site).is_ok_and(|r| matches!(r.op, BinaryOp::Add | BinaryOp::Mul | BinaryOp::Max | BinaryOp::Min));
        if !lane_reduction {
            return Err(site.illegal(&why));
        }
    }
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
