//! Kernel inputs from .npy files (float32, float64, float16, or bfloat16 as `np.save` writes
//! `ml_dtypes.bfloat16` arrays: two-byte `V2` elements; int32 or int64 for an integer
//! parameter; checked against the parameters) or from a seed, and arrays written back as .npy
//! files.

use std::fs::File;
use std::path::{Path, PathBuf};

use ndarray::{ArrayD, IxDyn};
use ndarray_npy::npy::header::Header;
use ndarray_npy::{ReadNpyExt, WriteNpyExt};
use ollie_graph::{DType, Graph, Param, Tensor};
use rand::{RngExt, SeedableRng};
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
    let expected = match param.ty.dtype {
        DType::F16 => "float16",
        DType::BF16 => "bfloat16 (ml_dtypes; saved as V2)",
        DType::I32 | DType::I64 => "int32 or int64",
        DType::I8 => "int8",
        DType::U8 => "uint8",
        DType::Bool => "bool",
        _ => "float32 or float64",
    };
    let int = param.ty.dtype.is_int() && !param.ty.dtype.is_byte();
    let dtype = match descr.trim_matches('\'') {
        "|i1" if param.ty.dtype == DType::I8 => DType::I8,
        "|u1" if param.ty.dtype == DType::U8 => DType::U8,
        "|b1" if param.ty.dtype == DType::Bool => DType::Bool,
        "<f4" if param.ty.dtype.is_float() => DType::F32,
        "<f8" if param.ty.dtype.is_float() => DType::F64,
        "<i4" if int => DType::I32,
        "<i8" if int => DType::I64,
        "<f2" => DType::F16,
        // numpy saves an ml_dtypes.bfloat16 array as two-byte voids: read as bfloat16 where the
        // parameter is one, and only there.
        "<V2" | "|V2" if param.ty.dtype == DType::BF16 => DType::BF16,
        other => {
            return Err(bad(format!(
                "dtype {} is not supported; expected {expected} with shape {:?}",
                numpy_dtype_name(other),
                param.ty.shape
            )))
        }
    };
    if matches!(header.layout, ndarray_npy::npy::header::Layout::Fortran) && dtype.is_half() {
        return Err(bad("a Fortran-order 16-bit array is not supported; save it with np.ascontiguousarray".to_string()));
    }
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
        DType::F16 | DType::BF16 => {
            let mut file = open()?;
            Header::from_reader(&mut file).map_err(|e| bad(format!("not a readable .npy file: {e}")))?;
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut file, &mut bytes).map_err(|e| bad(format!("cannot read: {e}")))?;
            let n: usize = header.shape.iter().product();
            if bytes.len() != 2 * n {
                return Err(bad(format!("holds {} bytes of data, {n} elements of 2 bytes expected", bytes.len())));
            }
            let bits = bytes.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]]));
            let values: Vec<f64> = bits.map(|h| dtype.half_value(h)).collect();
            ArrayD::from_shape_vec(IxDyn(&header.shape), values).expect("the size was checked")
        }
        DType::I32 => ArrayD::<i32>::read_npy(open()?).map_err(|e| bad(format!("cannot read: {e}")))?.mapv(f64::from),
        DType::I64 => ArrayD::<i64>::read_npy(open()?).map_err(|e| bad(format!("cannot read: {e}")))?.mapv(|i| i as f64),
        DType::I8 => ArrayD::<i8>::read_npy(open()?).map_err(|e| bad(format!("cannot read: {e}")))?.mapv(f64::from),
        DType::U8 => ArrayD::<u8>::read_npy(open()?).map_err(|e| bad(format!("cannot read: {e}")))?.mapv(f64::from),
        DType::Bool => ArrayD::<bool>::read_npy(open()?).map_err(|e| bad(format!("cannot read: {e}")))?.mapv(|b| f64::from(u8::from(b))),
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
        "|i1" => "int8",
        "|u1" => "uint8",
        "<i8" => "int64",
        "|b1" => "bool",
        other => return format!("`{other}`"),
    };
    name.to_string()
}

/// Seeded inputs for `graph`: standard normal, rounded to each parameter's dtype; an integer
/// parameter uniform in its index range (`Graph::index_range`, without negatives).
pub fn random(graph: &Graph, seed: u64) -> Vec<Tensor> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..graph.params.len())
        .map(|k| {
            let p = &graph.params[k];
            let range = graph.index_range(k);
            ArrayD::from_shape_simple_fn(IxDyn(&p.ty.shape), || match range {
                Some(r) => r.value(rng.random_range(0..r.extent as i64)),
                None => {
                    let x: f64 = StandardNormal.sample(&mut rng);
                    p.ty.dtype.round(x)
                }
            })
        })
        .collect()
}

/// Writes `value` as a .npy file of `dtype`: float64, float16, bfloat16 (as `np.save` writes
/// ml_dtypes' arrays: `V2`, which `.view(ml_dtypes.bfloat16)` reads back), int32, int64, int8,
/// uint8, bool, else float32.
pub fn write_npy(path: &Path, value: &Tensor, dtype: DType) -> anyhow::Result<()> {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    match dtype {
        DType::F64 => value.write_npy(file)?,
        DType::F16 | DType::BF16 => {
            let descr = if dtype == DType::F16 { "<f2" } else { "<V2" };
            let shape: Vec<String> = value.shape().iter().map(|n| n.to_string()).collect();
            let shape = if shape.len() == 1 { format!("({},)", shape[0]) } else { format!("({})", shape.join(", ")) };
            let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
            // Magic, version, length, then the header padded with spaces to a multiple of 64
            // bytes, ending in a newline.
            while (10 + header.len() + 1) % 64 != 0 {
                header.push(' ');
            }
            header.push('\n');
            use std::io::Write;
            file.write_all(b"\x93NUMPY\x01\x00")?;
            file.write_all(&(header.len() as u16).to_le_bytes())?;
            file.write_all(header.as_bytes())?;
            for &x in value.as_standard_layout().iter() {
                file.write_all(&dtype.half_bits(x).to_le_bytes())?;
            }
            file.flush()?;
        }
        DType::I32 => value.mapv(|x| x as i32).write_npy(file)?,
        DType::I64 => value.mapv(|x| x as i64).write_npy(file)?,
        DType::I8 => value.mapv(|x| x as i8).write_npy(file)?,
        DType::U8 => value.mapv(|x| x as u8).write_npy(file)?,
        DType::Bool => value.mapv(|x| x != 0.0).write_npy(file)?,
        _ => value.mapv(|x| x as f32).write_npy(file)?,
    }
    Ok(())
}
