//! Kernel inputs from .npy files (f32 or f64, checked against the parameters) or from a seed,
//! and arrays written back as .npy files.

use std::fs::File;
use std::path::{Path, PathBuf};

use ndarray::{ArrayD, IxDyn};
use ndarray_npy::npy::header::Header;
use ndarray_npy::{ReadNpyExt, WriteNpyExt};
use ollie_graph::{DType, Param, Tensor};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

use crate::{user_error, Error};

/// One array per parameter, in parameter order, read from `NAME=FILE.npy` pairs.
pub fn from_files(params: &[Param], given: &[(String, PathBuf)]) -> Result<Vec<Tensor>, Error> {
    for (i, (name, _)) in given.iter().enumerate() {
        if !params.iter().any(|p| &p.name == name) {
            let names: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
            return Err(user_error(format!("error: the kernel has no parameter `{name}` (parameters: {})", names.join(", "))));
        }
        if given[..i].iter().any(|(n, _)| n == name) {
            return Err(user_error(format!("error: input `{name}` is given twice")));
        }
    }
    params
        .iter()
        .map(|p| match given.iter().find(|(n, _)| n == &p.name) {
            Some((_, path)) => read(p, path),
            None => Err(user_error(format!(
                "error: missing input `{}` ({}): pass --input {}=FILE.npy",
                p.name, p.ty, p.name
            ))),
        })
        .collect()
}

fn read(param: &Param, path: &Path) -> Result<Tensor, Error> {
    let bad = |what: String| user_error(format!("error: input `{}` from {}: {what}", param.name, path.display()));
    let open = || File::open(path).map_err(|e| bad(format!("cannot open: {e}")));
    let header = Header::from_reader(&mut open()?).map_err(|e| bad(format!("not a readable .npy file: {e}")))?;
    let descr = header.type_descriptor.to_string();
    let dtype = match descr.trim_matches('\'') {
        "<f4" => DType::F32,
        "<f8" => DType::F64,
        other => {
            return Err(bad(format!(
                "dtype {} is not supported; expected float32 or float64 with shape {:?}",
                numpy_dtype_name(other),
                param.ty.shape
            )))
        }
    };
    if header.shape != param.ty.shape {
        return Err(bad(format!(
            "expected shape {:?} ({}), got shape {:?} ({})",
            param.ty.shape,
            param.ty,
            header.shape,
            numpy_dtype_name(descr.trim_matches('\''))
        )));
    }
    let array: Tensor = match dtype {
        DType::F32 => ArrayD::<f32>::read_npy(open()?).map_err(|e| bad(format!("cannot read: {e}")))?.mapv(f64::from),
        _ => ArrayD::<f64>::read_npy(open()?).map_err(|e| bad(format!("cannot read: {e}")))?,
    };
    Ok(array)
}

fn numpy_dtype_name(descr: &str) -> String {
    let name = match descr {
        "<f4" => "float32",
        "<f8" => "float64",
        "<f2" => "float16",
        "<i4" => "int32",
        "<i8" => "int64",
        "|b1" => "bool",
        "|u1" => "uint8",
        other => return format!("`{other}`"),
    };
    name.to_string()
}

/// Seeded standard-normal inputs, rounded to each parameter's dtype.
pub fn random(params: &[Param], seed: u64) -> Vec<Tensor> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    params
        .iter()
        .map(|p| {
            ArrayD::from_shape_simple_fn(IxDyn(&p.ty.shape), || {
                let x: f64 = StandardNormal.sample(&mut rng);
                if p.ty.dtype == DType::F32 { x as f32 as f64 } else { x }
            })
        })
        .collect()
}

/// Writes `value` as a .npy file of `dtype` (float32 unless float64).
pub fn write_npy(path: &Path, value: &Tensor, dtype: DType) -> anyhow::Result<()> {
    let file = std::io::BufWriter::new(std::fs::File::create(path)?);
    match dtype {
        DType::F32 => value.mapv(|x| x as f32).write_npy(file)?,
        _ => value.write_npy(file)?,
    }
    Ok(())
}
