//! `cargo xtask decode`: runs the `decode` example of kafka-protocol (xtask itself does not
//! depend on the generated code, so that codegen works even when that code does not build).

use std::path::Path;

use crate::Error;

pub(crate) fn run(root: &Path, args: &[String]) -> Result<(), Error> {
    let mut full = vec![
        "run",
        "--quiet",
        "-p",
        "kafka-protocol",
        "--example",
        "decode",
        "--",
    ];
    full.extend(args.iter().map(String::as_str));
    crate::cargo(root, &full)
}
