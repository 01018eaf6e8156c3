//! Where each buffer lives in the shared memory file: after a one-page header, each buffer starts
//! 64-byte aligned and ends within 64 bytes of a page boundary (at it when its length is a
//! multiple of 64, as a verification's inputs of whole vectors are), followed by a guard page,
//! so reading or writing past its end faults; the slack bytes around it hold a canary pattern.
//! For timing, inputs start 16 bytes past a 64-byte boundary instead: where numpy's large arrays
//! lie (the C library's allocation header before them), so that kernels are timed on inputs
//! placed as a user's are (a kernel that assumes more alignment of them faults).

use ollie_graph::DType;

/// A buffer of the kernel ABI: element type and shape.
#[derive(Debug, Clone, PartialEq)]
pub struct BufferSpec {
    pub dtype: DType,
    pub shape: Vec<usize>,
}

impl From<&ollie_graph::TensorType> for BufferSpec {
    fn from(ty: &ollie_graph::TensorType) -> BufferSpec {
        BufferSpec { dtype: ty.dtype, shape: ty.shape.clone() }
    }
}

impl BufferSpec {
    /// The ABI's buffers of `graph`: its inputs, then its outputs.
    pub fn of(graph: &ollie_graph::Graph) -> (Vec<BufferSpec>, Vec<BufferSpec>) {
        let inputs = graph.params.iter().map(|p| BufferSpec::from(&p.ty)).collect();
        // Integer and boolean results are float32 in the ABI.
        let outputs = graph.outputs.iter().map(|&o| BufferSpec { dtype: graph.ty(o).dtype.result(), shape: graph.ty(o).shape.clone() }).collect();
        (inputs, outputs)
    }

    pub(crate) fn element_size(&self) -> usize {
        self.dtype.size()
    }

    pub(crate) fn bytes(&self) -> usize {
        self.shape.iter().product::<usize>() * self.element_size()
    }
}

pub(crate) const PAGE: usize = 4096;
/// Output alignment: the ABI promises at least 64 bytes.
pub(crate) const ALIGN: usize = 64;
/// Where a timing session's inputs start past a 64-byte boundary: the ABI promises inputs
/// 16-byte alignment only.
pub(crate) const INPUT_OFFSET: usize = 16;
/// The byte the slack around buffers is filled with.
pub(crate) const CANARY: u8 = 0xa5;

/// Header fields (byte offsets into the first page).
pub(crate) mod header {
    /// Nanoseconds the last call took (u64).
    pub const ELAPSED: usize = 0;
    /// [`super::RETURNED`] once the kernel has returned.
    pub const RETURNED: usize = 8;
    /// 1 + the number of a forbidden system call the kernel attempted (0: none).
    pub const SYSCALL: usize = 16;
    /// 1 + the index of the buffer whose guard page (or read-only input) the kernel touched.
    pub const FAULT_BUFFER: usize = 24;
    /// The faulting address.
    pub const FAULT_ADDRESS: usize = 32;
    /// Nonzero when the fault was a write to an input.
    pub const FAULT_WRITE_INPUT: usize = 40;
}

/// Proof that the kernel returned to the sandbox (rather than, say, calling `exit`).
pub(crate) const RETURNED: u64 = 0x6f6c_6c69_6564_6f6e;

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Region {
    /// The page-aligned start of the region (its first data page).
    pub region: usize,
    /// Where the buffer starts (64-byte aligned, or [`INPUT_OFFSET`] past it for a timing
    /// session's input).
    pub start: usize,
    /// The buffer's length in bytes.
    pub len: usize,
    /// The guard page right after the data pages.
    pub guard: usize,
}

/// The layout of all buffers (inputs first, then outputs).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Layout {
    pub regions: Vec<Region>,
    pub total: usize,
}

impl Layout {
    /// The layout of `buffers`, the first `offset_inputs` of them at [`INPUT_OFFSET`].
    pub fn new(buffers: &[BufferSpec], offset_inputs: usize) -> Layout {
        let mut at = PAGE;
        let regions = buffers
            .iter()
            .enumerate()
            .map(|(k, b)| Layout::region(&mut at, b.bytes(), if k < offset_inputs { INPUT_OFFSET } else { 0 }))
            .collect();
        Layout { regions, total: at }
    }

    fn region(at: &mut usize, len: usize, offset: usize) -> Region {
        let padded = (len + offset).div_ceil(ALIGN).max(1) * ALIGN;
        let pages = padded.div_ceil(PAGE);
        let region = *at;
        let guard = region + pages * PAGE;
        *at = guard + PAGE;
        Region { region, start: guard - padded + offset, len, guard }
    }

    /// The command-line form the sandbox reads: `region:start:len:guard,...`.
    pub fn encode(&self) -> String {
        self.regions.iter().map(|r| format!("{}:{}:{}:{}", r.region, r.start, r.len, r.guard)).collect::<Vec<_>>().join(",")
    }

    pub fn decode(text: &str) -> Option<Layout> {
        let mut regions = Vec::new();
        for part in text.split(',').filter(|p| !p.is_empty()) {
            let n: Vec<usize> = part.split(':').map(|x| x.parse().ok()).collect::<Option<_>>()?;
            let [region, start, len, guard] = n.as_slice() else { return None };
            regions.push(Region { region: *region, start: *start, len: *len, guard: *guard });
        }
        let total = regions.last().map_or(PAGE, |r| r.guard + PAGE);
        Some(Layout { regions, total })
    }
}
