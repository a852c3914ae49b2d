//! `cargo xtask fuzz`: not written yet.

use std::path::Path;

use crate::Error;

pub(crate) fn run(_root: &Path, _args: &[String]) -> Result<(), Error> {
    Err("fuzz: not implemented yet".into())
}
