//! `ollie model`: what the cost model of this machine class has learnt from, and how well it
//! ranked each search it started.

use ollie_driver::training;
use ollie_driver::workers;

use crate::{stdout, Failure};

pub fn run() -> Result<(), Failure> {
    let (machine, _, _) = ollie_driver::setup::machine_ceilings(false, &Default::default())?;
    let class = workers::machine_class(&machine);
    stdout(&training::summary(&class))
}
