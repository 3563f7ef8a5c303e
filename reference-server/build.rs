//! Rebuilds the crate when a migration is added or changed: `sqlx::migrate!` embeds the files at
//! compile time, and cargo does not see a new file in a folder it was not told to watch (sqlx's
//! documented build script).

fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
