//! Tells the binary its commit (`SLUICE_COMMIT`), which benchmark results
//! record; "unknown" outside a git checkout.

use std::process::Command;

/// What `git ARGS` prints, when it succeeds and prints something.
fn git(args: &[&str]) -> Option<String> {
    Command::new("git")
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=SLUICE_COMMIT={commit}");
    // A commit moves HEAD, or the ref HEAD names (loose or packed): watch
    // them where git keeps them (in a worktree `.git` is a file).
    let mut watch = vec!["HEAD".to_string(), "packed-refs".to_string()];
    watch.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for name in watch {
        let path = git(&["rev-parse", "--git-path", &name]);
        if let Some(p) = path.filter(|p| std::path::Path::new(p).exists()) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    println!("cargo:rerun-if-env-changed=SLUICE_BUILD");
}
