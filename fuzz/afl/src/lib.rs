//! The harness of sluice's coverage-guided fuzz targets (`src/bin`).
//!
//! Built by `fuzz/afl/run` with AFL++'s coverage instrumentation and
//! `--cfg fuzzing` (see `rustc-wrap`), [`fuzz`] is AFL++'s persistent
//! mode: the fork server starts once the target has set itself up, and
//! each child runs many inputs, handed over in shared memory. Built plainly
//! (every test build compiles it), it runs one input read from stdin: the
//! way to replay a crash, `cargo run -p sluice-fuzz --bin wire < crash`.
//! A panic anywhere aborts (AFL++ records a crash), even where sluice
//! itself would catch it and answer XX000: a panic is a bug either way.

use std::io::Read;

#[cfg(fuzzing)]
mod afl {
    // AFL++'s runtime (afl-compiler-rt.o, linked by `rustc-wrap`).
    unsafe extern "C" {
        pub fn __afl_persistent_loop(max: u32) -> i32;
        pub fn __afl_manual_init();
        pub static __afl_fuzz_len: *const u32;
        pub static __afl_fuzz_ptr: *const u8;
    }

    /// Inputs in shared memory rather than on stdin.
    #[unsafe(no_mangle)]
    pub static mut __afl_sharedmem_fuzzing: i32 = 1;

    /// afl-fuzz looks for these strings in the binary to know the
    /// target's modes (persistent, deferred fork server).
    pub static PERSISTENT: &[u8] = b"##SIG_AFL_PERSISTENT##\0";
    pub static DEFERRED: &[u8] = b"##SIG_AFL_DEFER_FORKSRV##\0";
}

/// Runs `each` on every input the fuzzer gives (one input from stdin when
/// not built for fuzzing).
pub fn fuzz(mut each: impl FnMut(&[u8])) {
    std::panic::set_hook(Box::new(|info| {
        eprintln!("{info}");
        std::process::abort();
    }));
    #[cfg(fuzzing)]
    unsafe {
        std::hint::black_box(afl::PERSISTENT);
        std::hint::black_box(afl::DEFERRED);
        afl::__afl_manual_init();
        let mut buf = Vec::new();
        while afl::__afl_persistent_loop(1000) != 0 {
            let input: &[u8] = if afl::__afl_fuzz_ptr.is_null() {
                buf.clear();
                if std::io::stdin().read_to_end(&mut buf).is_err() {
                    return;
                }
                &buf
            } else {
                std::slice::from_raw_parts(afl::__afl_fuzz_ptr, *afl::__afl_fuzz_len as usize)
            };
            each(input);
        }
        // The loop's end: this child is done. Nothing is dropped on the
        // way out: what the target set up before the fork (its scratch
        // database) is the next child's too.
        std::process::exit(0);
    }
    #[cfg(not(fuzzing))]
    {
        let mut buf = Vec::new();
        if std::io::stdin().read_to_end(&mut buf).is_ok() {
            each(&buf);
        }
    }
}

/// A scratch directory removed when dropped.
pub struct Scratch(pub std::path::PathBuf);

impl Scratch {
    /// `sluice-fuzz-TAG-PID` in the temporary directory. Those of earlier
    /// runs whose process is gone are removed first: a fuzzing run's fork
    /// server never returns to drop its own.
    pub fn new(tag: &str) -> Scratch {
        let tmp = std::env::temp_dir();
        let prefix = format!("sluice-fuzz-{tag}-");
        for e in std::fs::read_dir(&tmp).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name.strip_prefix(&prefix)
                && pid.parse::<u32>().is_ok()
                && !std::path::Path::new("/proc").join(pid).exists()
            {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
        let p = tmp.join(format!("{prefix}{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("a scratch directory");
        Scratch(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A table `t` of every type, NULLs and extremes included, in a database
/// under `dir`: its path.
pub fn sample_db(dir: &std::path::Path) -> std::path::PathBuf {
    use sluice::load::{Header, LoadOptions, load};
    use sluice::source::Input;
    use sluice::store::Database;
    const CSV: &str = "i,j,d,s,dt,ts,b
1,10,1.5,a,2024-01-31,2024-01-31 12:00:00Z,true
2,-3,,bb,2024-02-29,2024-07-01 00:30:00+02,false
,7,-0.0,,1999-12-31,,
4,9223372036854775807,1e300,a,2024-01-31,2024-01-31 12:00:00Z,true
5,0,nan,ccc,,1970-01-01 00:00:00Z,false
";
    let file = dir.join("t.csv");
    std::fs::write(&file, CSV).expect("the table's file");
    let db_dir = dir.join("db");
    let mut db = Database::open_writer(&db_dir).expect("a database");
    let o = LoadOptions {
        schema: Some(
            "i INT, j BIGINT, d DOUBLE, s TEXT, dt DATE, ts TIMESTAMPTZ, b BOOLEAN"
                .parse()
                .expect("the schema"),
        ),
        header: Header::Yes,
        key: Some("j".into()),
        ..Default::default()
    };
    load(&mut db, "t", &[Input::File(file)], &o).expect("the load");
    db_dir
}
