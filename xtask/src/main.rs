//! `cargo xtask pgo`: a profile-guided build of sluice in one command.
//!
//! 1. Finds `llvm-profdata` of rustc's LLVM major version (installs
//!    Debian's `llvm-<major>` with apt when it is missing and this is root,
//!    and says so).
//! 2. Builds an instrumented `sluice` (`-Cprofile-generate`).
//! 3. Runs its training workload (`sluice bench profile-workload`).
//! 4. Merges the profiles and builds the optimised binary
//!    (`-Cprofile-use`) into `target/pgo/optimized/release/sluice`.
//! 5. Unless `--no-compare`: times held-out scenarios (ingest of integer
//!    CSV, JSON lines, TPC-H Q1, key lookups, and `sluice serve` under
//!    pgbench at 1 and 256 clients when pgbench is installed; data other
//!    than the workload's) with the ordinary release binary and the PGO
//!    one, interleaved, and prints medians and ratios.
//!
//! Standard library only, so that it builds in seconds.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

type Result<T> = std::result::Result<T, String>;

const USAGE: &str = "usage: cargo xtask pgo [--scale F] [--runs N] [--no-compare] [--profile P] [--sf F] [--rows N] [--json-out FILE]

Builds target/pgo/optimized/release/sluice (under $CARGO_TARGET_DIR when set) with profile-guided optimisation:
  --scale F      size of the training workload (default 1: about a minute instrumented; CI uses 0.02)
  --no-compare   build only; do not time the held-out scenarios
  --profile P    the cargo profile of both builds (default release; the binary is then
                 target/pgo/optimized/P/sluice). CI checks the steps with `pgo-check`
                 (Cargo.toml: opt-level 1, no debug info), much less compile time;
                 its binary is for tests, never for timing, so it is not compared
  --runs N       timed runs per binary and scenario (default 7; medians reported)
  --sf F         TPC-H scale factor of the held-out Q1 data (default 1)
  --rows N       rows of the held-out ingest data (default 40000000: 1.28 GB)
  --json-out F   write every timed run as a results file of `sluice bench` (scenario \"pgo\"),
                 which `sluice bench report` charts as the gain per scenario";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("pgo") => Options::parse(&args[1..]).and_then(|o| pgo(&o)),
        Some("-h" | "--help") | None => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Some(other) => Err(format!("unknown task {other:?}\n\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

struct Options {
    scale: f64,
    runs: usize,
    compare: bool,
    sf: f64,
    rows: u64,
    json_out: Option<PathBuf>,
    profile: String,
}

impl Options {
    fn parse(args: &[String]) -> Result<Options> {
        let mut o = Options {
            scale: 1.0,
            runs: 7,
            compare: true,
            sf: 1.0,
            rows: 40_000_000,
            json_out: None,
            profile: "release".into(),
        };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut value = |name: &str| {
                it.next()
                    .cloned()
                    .ok_or_else(|| format!("{name} needs a value\n\n{USAGE}"))
            };
            let bad = |name: &str, v: &str| format!("{name} {v:?}: not a number\n\n{USAGE}");
            match a.as_str() {
                "--scale" => {
                    let v = value("--scale")?;
                    o.scale = v.parse().map_err(|_| bad("--scale", &v))?;
                }
                "--runs" => {
                    let v = value("--runs")?;
                    o.runs = v.parse().map_err(|_| bad("--runs", &v))?;
                }
                "--sf" => {
                    let v = value("--sf")?;
                    o.sf = v.parse().map_err(|_| bad("--sf", &v))?;
                }
                "--rows" => {
                    let v = value("--rows")?;
                    o.rows = v.parse().map_err(|_| bad("--rows", &v))?;
                }
                "--no-compare" => o.compare = false,
                "--profile" => o.profile = value("--profile")?,
                "--json-out" => o.json_out = Some(PathBuf::from(value("--json-out")?)),
                "-h" | "--help" => return Err(USAGE.to_string()),
                other => return Err(format!("unknown option {other:?}\n\n{USAGE}")),
            }
        }
        if o.json_out.is_some() && !o.compare {
            return Err(format!(
                "--json-out writes the comparison's runs; drop --no-compare\n\n{USAGE}"
            ));
        }
        if o.compare && o.profile != "release" {
            return Err(format!(
                "--profile {}: only the release profile is compared (add --no-compare)\n\n{USAGE}",
                o.profile
            ));
        }
        if o.runs == 0 || o.scale <= 0.0 || o.sf <= 0.0 || o.rows == 0 {
            return Err(format!(
                "--runs, --scale, --sf and --rows must be positive\n\n{USAGE}"
            ));
        }
        Ok(o)
    }
}

/// Runs `cmd`, failing with its name when it cannot start or fails.
fn run(cmd: &mut Command, what: &str) -> Result<()> {
    let status = cmd
        .status()
        .map_err(|e| format!("{what}: cannot start {:?}: {e}", cmd.get_program()))?;
    if !status.success() {
        return Err(format!("{what} failed ({status})"));
    }
    Ok(())
}

fn output(cmd: &mut Command) -> Option<String> {
    let out = cmd.stderr(Stdio::null()).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The LLVM major version of the rustc that builds.
fn rustc_llvm_major() -> Result<String> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let v =
        output(Command::new(&rustc).arg("-vV")).ok_or_else(|| format!("cannot run {rustc} -vV"))?;
    v.lines()
        .find_map(|l| l.strip_prefix("LLVM version: "))
        .and_then(|v| v.split('.').next())
        .map(str::to_string)
        .ok_or_else(|| "rustc -vV does not say its LLVM version".into())
}

/// An `llvm-profdata` of LLVM `major` (profiles of another version are
/// rejected by rustc or, worse, misread).
fn find_profdata(major: &str) -> Option<PathBuf> {
    let candidates = [
        format!("llvm-profdata-{major}"),
        format!("/usr/lib/llvm-{major}/bin/llvm-profdata"),
        "llvm-profdata".to_string(),
    ];
    candidates.into_iter().map(PathBuf::from).find(|c| {
        output(Command::new(c).arg("--version"))
            .is_some_and(|v| v.contains(&format!("LLVM version {major}.")))
    })
}

fn is_root() -> bool {
    output(Command::new("id").arg("-u")).is_some_and(|u| u.trim() == "0")
}

fn profdata(major: &str) -> Result<PathBuf> {
    if let Some(p) = find_profdata(major) {
        return Ok(p);
    }
    let package = format!("llvm-{major}");
    let apt = Path::new("/usr/bin/apt-get").exists();
    if !(apt && is_root()) {
        return Err(format!(
            "llvm-profdata of LLVM {major} (rustc's) is missing: install it (Debian: apt-get install {package}; or rustup component add llvm-tools) and run again"
        ));
    }
    println!(
        "llvm-profdata of LLVM {major} (rustc's) is missing: installing Debian's {package} with apt-get"
    );
    run(
        Command::new("apt-get").args(["update", "-qq"]),
        "apt-get update",
    )?;
    run(
        Command::new("apt-get")
            .args(["install", "-y", "-qq", &package])
            .env("DEBIAN_FRONTEND", "noninteractive"),
        &format!("apt-get install {package}"),
    )?;
    find_profdata(major).ok_or_else(|| {
        format!("{package} is installed, but no llvm-profdata of LLVM {major} answers")
    })
}

/// `cargo build --profile <profile> -p sluice-cli` into `target_dir` with
/// `rustflags`.
fn build(
    root: &Path,
    target_dir: &Path,
    profile: &str,
    rustflags: &str,
    what: &str,
) -> Result<PathBuf> {
    println!("== {what}");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root)
        .args([
            "build",
            "--profile",
            profile,
            "-p",
            "sluice-cli",
            "--target-dir",
        ])
        .arg(target_dir);
    if rustflags.is_empty() {
        cmd.env_remove("RUSTFLAGS");
    } else {
        cmd.env("RUSTFLAGS", rustflags);
    }
    // What the binary's benchmark results say it is (`"build"`).
    let check = if profile == "release" { "" } else { "-check" };
    if rustflags.contains("profile-use") {
        cmd.env("SLUICE_BUILD", format!("pgo{check}"));
    } else if rustflags.contains("profile-generate") {
        cmd.env("SLUICE_BUILD", format!("pgo-instrumented{check}"));
    } else {
        cmd.env_remove("SLUICE_BUILD");
    }
    run(&mut cmd, what)?;
    Ok(target_dir.join(profile).join("sluice"))
}

fn pgo(o: &Options) -> Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or("the xtask crate has no parent directory")?
        .to_path_buf();
    // Under the target directory cargo uses (CARGO_TARGET_DIR or target/).
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|t| if t.is_absolute() { t } else { root.join(t) })
        .unwrap_or_else(|| root.join("target"));
    let base = target.join("pgo");
    let profiles = base.join("profiles");
    let _ = std::fs::remove_dir_all(&profiles);
    std::fs::create_dir_all(&profiles).map_err(|e| format!("{}: {e}", profiles.display()))?;
    let started = Instant::now();

    let major = rustc_llvm_major()?;
    let profdata = profdata(&major)?;
    println!("using {} (LLVM {major}, as rustc)", profdata.display());

    let instrumented = build(
        &root,
        &base.join("instrumented"),
        &o.profile,
        &format!("-Cprofile-generate={}", profiles.display()),
        "building an instrumented sluice",
    )?;
    println!(
        "== training: sluice bench profile-workload --scale {}",
        o.scale
    );
    run(
        Command::new(&instrumented)
            .args(["bench", "profile-workload", "--scale"])
            .arg(o.scale.to_string())
            .env("LLVM_PROFILE_FILE", profiles.join("sluice-%p-%m.profraw")),
        "the profile workload",
    )?;
    let raw = base.join("sluice.profdata");
    run(
        Command::new(&profdata)
            .arg("merge")
            .arg("-o")
            .arg(&raw)
            .arg(&profiles),
        "merging the profiles",
    )?;
    // Named by its contents: cargo does not look into the file, so a new
    // profile must change the flags for every crate to be rebuilt with it.
    let bytes = std::fs::read(&raw).map_err(|e| format!("{}: {e}", raw.display()))?;
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let merged = base.join(format!("sluice-{hash:016x}.profdata"));
    std::fs::rename(&raw, &merged).map_err(|e| format!("{}: {e}", merged.display()))?;
    let optimized = build(
        &root,
        &base.join("optimized"),
        &o.profile,
        &format!("-Cprofile-use={}", merged.display()),
        "building sluice with the profile",
    )?;
    println!(
        "\nPGO binary: {} (built in {:.0} s)",
        optimized.display(),
        started.elapsed().as_secs_f64()
    );
    if !o.compare {
        return Ok(());
    }
    let release = build(
        &root,
        &target,
        "release",
        "",
        "building the ordinary release binary",
    )?;
    compare(o, &base.join("heldout"), &release, &optimized)
}

/// A held-out scenario: prepared once, then timed as one process run.
struct Scenario {
    name: &'static str,
    /// The command for a binary (everything after the binary).
    args: Vec<String>,
    /// Removed before each timed run (a database a load creates).
    fresh: Option<PathBuf>,
    /// Instead of `args`: the binary serves this database and pgbench's
    /// run against it is timed.
    serve: Option<Served>,
}

/// `sluice serve` under pgbench: `clients` clients running `transactions`
/// prepared point selects each.
struct Served {
    db: PathBuf,
    script: PathBuf,
    clients: usize,
    transactions: usize,
}

fn time_served(bin: &Path, s: &Served) -> Result<f64> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("picking a port: {e}"))?
        .port();
    let mut server = Command::new(bin)
        .arg("--db")
        .arg(&s.db)
        .args(["--quiet", "serve", "--listen", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if start.elapsed().as_secs() > 30 {
            let _ = server.kill();
            return Err(format!("{} serve did not start", bin.display()));
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let start = Instant::now();
    let out = Command::new("pgbench")
        .args(["-n", "-M", "prepared", "-h", "127.0.0.1", "-U", "pgo"])
        .args(["-p", &port.to_string()])
        .args(["-c", &s.clients.to_string()])
        .args(["-j", &s.clients.min(2).to_string()])
        .args(["-t", &s.transactions.to_string(), "-f"])
        .arg(&s.script)
        .arg("postgres")
        .output();
    let secs = start.elapsed().as_secs_f64();
    let _ = server.kill();
    let _ = server.wait();
    let out = out.map_err(|e| format!("running pgbench: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "pgbench against {} failed: {}",
            bin.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(secs)
}

fn time_one(bin: &Path, s: &Scenario) -> Result<f64> {
    if let Some(sv) = &s.serve {
        return time_served(bin, sv);
    }
    if let Some(d) = &s.fresh {
        let _ = std::fs::remove_dir_all(d);
    }
    let start = Instant::now();
    let out = Command::new(bin)
        .args(&s.args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    let secs = start.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(format!(
            "{}: {} failed: {}",
            s.name,
            bin.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(secs)
}

/// Writes the timed runs as a results file of `sluice bench` (FORMAT.md,
/// "Benchmark results"): scenario `pgo`, series `release` and `pgo`, one
/// measurement per held-out scenario, the runs in the order they were
/// interleaved (pairs). The machine comes from `sluice bench machine`.
fn write_results(
    path: &Path,
    dir: &Path,
    release: &Path,
    scenarios: &[Scenario],
    times: &[(Vec<f64>, Vec<f64>)],
) -> Result<()> {
    let machine = Command::new(release)
        .args(["bench", "machine", "--dir"])
        .arg(dir)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .ok_or("sluice bench machine failed")?;
    let commit = output(
        Command::new("git")
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["rev-parse", "--short=12", "HEAD"]),
    )
    .map(|c| c.trim().to_string())
    .unwrap_or_else(|| "unknown".into());
    let date = output(Command::new("date").args(["-u", "+%Y-%m-%dT%H:%M:%SZ"]))
        .map(|d| d.trim().to_string())
        .unwrap_or_default();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quote = |s: &str| {
        let mut q = String::from("\"");
        for c in s.chars() {
            match c {
                '"' => q.push_str("\\\""),
                '\\' => q.push_str("\\\\"),
                c if (c as u32) < 0x20 => q.push_str(&format!("\\u{:04x}", c as u32)),
                c => q.push(c),
            }
        }
        q.push('"');
        q
    };
    let command = ["cargo".to_string(), "xtask".to_string()]
        .into_iter()
        .chain(args)
        .map(|a| quote(&a))
        .collect::<Vec<_>>()
        .join(", ");
    let nums = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut results = Vec::new();
    for (s, (rel, p)) in scenarios.iter().zip(times) {
        for (series, runs) in [("release", rel), ("pgo", p)] {
            results.push(format!(
                "    {{\"series\": \"{series}\", \"case\": {{\"scenario\": {}}}, \"metric\": \"seconds\", \"unit\": \"s\", \"runs\": [{}]}}",
                quote(s.name),
                nums(runs)
            ));
        }
    }
    let doc = format!(
        "{{\n  \"format\": \"sluice-bench/1\",\n  \"scenario\": \"pgo\",\n  \"command\": [{command}],\n  \"commit\": {},\n  \"build\": \"pgo\",\n  \"date\": {},\n  \"machine\": {machine},\n  \"results\": [\n{}\n  ]\n}}\n",
        quote(&commit),
        quote(&date),
        results.join(",\n")
    );
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    std::fs::write(path, doc).map_err(|e| format!("{}: {e}", path.display()))?;
    println!("results written to {}", path.display());
    Ok(())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Writes `rows` TSV rows keyed by a unique 19-digit id (a bijection of
/// the row number, other than the workload's) and a file of `lookups`
/// present keys.
fn write_keyed(dir: &Path, rows: u64, lookups: u64) -> Result<()> {
    use std::io::Write;
    let id = |i: u64| {
        let mut x = i.wrapping_mul(0xD6E8_FEB8_6659_FD93) & ((1 << 62) - 1);
        x ^= x >> 32;
        1_000_000_000_000_000_000 + x
    };
    let err = |e: std::io::Error| format!("writing held-out data in {}: {e}", dir.display());
    let mut w =
        std::io::BufWriter::new(std::fs::File::create(dir.join("objects.tsv")).map_err(err)?);
    for i in 0..rows {
        writeln!(w, "{}\t{}\t{}", id(i), i % 150_000, i % 1_000).map_err(err)?;
    }
    w.flush().map_err(err)?;
    let mut k = std::io::BufWriter::new(std::fs::File::create(dir.join("keys.txt")).map_err(err)?);
    let mut s = 0x2545_F491_4F6C_DD1Du64;
    for _ in 0..lookups {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        writeln!(k, "{}", id(s % rows)).map_err(err)?;
    }
    k.flush().map_err(err)
}

/// `rows` rows `id,a,b` keyed by 1..=rows, values of another generator
/// than the benchmark's.
fn write_serve_rows(dir: &Path, rows: u64) -> Result<()> {
    use std::io::Write;
    let f = dir.join("serve-rows.csv");
    let err = |e: std::io::Error| format!("writing {}: {e}", f.display());
    let mut w = std::io::BufWriter::new(std::fs::File::create(&f).map_err(err)?);
    writeln!(w, "id,a,b").map_err(err)?;
    for id in 1..=rows {
        let x = id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        writeln!(w, "{id},{},{}", x >> 44, x % 977).map_err(err)?;
    }
    w.flush().map_err(err)
}

fn compare(o: &Options, dir: &Path, release: &Path, pgo: &Path) -> Result<()> {
    println!("== held-out data in {}", dir.display());
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let d = |p: &str| dir.join(p).to_string_lossy().into_owned();
    // Inputs other than the workload's: the ingest benchmark's integers,
    // TPC-H lineitem, and keys of another generator.
    let ints = dir.join(format!("ints-{}.csv", o.rows));
    if !ints.exists() {
        run(
            Command::new(release).args([
                "gen",
                "ints",
                "--rows",
                &o.rows.to_string(),
                "--output",
                &ints.to_string_lossy(),
            ]),
            "generating the ingest data",
        )?;
    }
    // JSON lines of another generator and seed than the workload's.
    let jsonl = dir.join("objects-7.jsonl");
    if !jsonl.exists() {
        run(
            Command::new(release).args([
                "gen",
                "objects",
                "--size",
                "440MB",
                "--seed",
                "7",
                "--output",
                &jsonl.to_string_lossy(),
            ]),
            "generating the JSON lines",
        )?;
    }
    let (keyed_rows, lookups) = (8_000_000, 1_000_000);
    let keyed_db = dir.join(format!("keyed-{keyed_rows}.db"));
    if !keyed_db.exists() {
        write_keyed(dir, keyed_rows, lookups)?;
        run(
            Command::new(release).args([
                "--db",
                &keyed_db.to_string_lossy(),
                "load",
                "--quiet",
                "--tsv",
                "--no-header",
                "--schema",
                "id TEXT PRIMARY KEY, chunk INT, sub INT",
                "objects",
                &d("objects.tsv"),
            ]),
            "loading the keyed table",
        )?;
        let _ = std::fs::remove_file(dir.join("objects.tsv"));
    }
    // The loaded table goes to memory when it can: the virtual disk's
    // flush times vary by ±30 % from run to run, and PGO changes code, not
    // the disk.
    let shm = Path::new("/dev/shm");
    let ingest_db = if shm.is_dir() {
        shm.join(format!("sluice-pgo-ingest-{}", std::process::id()))
    } else {
        dir.join("ingest.db")
    };
    let json_db = ingest_db.with_extension("json");
    let scenarios = [
        Scenario {
            name: "ingest",
            args: vec![
                "--db".into(),
                ingest_db.to_string_lossy().into_owned(),
                "load".into(),
                "--quiet".into(),
                "--no-header".into(),
                "--schema".into(),
                "a BIGINT, b BIGINT, c BIGINT".into(),
                "ints".into(),
                ints.to_string_lossy().into_owned(),
            ],
            fresh: Some(ingest_db.clone()),
            serve: None,
        },
        Scenario {
            name: "json",
            args: vec![
                "--db".into(),
                json_db.to_string_lossy().into_owned(),
                "load".into(),
                "--quiet".into(),
                "--format".into(),
                "jsonl".into(),
                "--schema".into(),
                "source_id TEXT, chunkId INT, subChunkId INT".into(),
                "objects".into(),
                jsonl.to_string_lossy().into_owned(),
            ],
            fresh: Some(json_db.clone()),
            serve: None,
        },
        // Ten warm runs of TPC-H Q1 in one process, after one untimed
        // (the scenario loads lineitem into the directory once).
        Scenario {
            name: "q1",
            args: vec![
                "bench".into(),
                "q1".into(),
                "--no-peers".into(),
                "--sf".into(),
                o.sf.to_string(),
                "--runs".into(),
                "10".into(),
                "--threads-list".into(),
                "2".into(),
                "--dir".into(),
                dir.to_string_lossy().into_owned(),
            ],
            fresh: None,
            serve: None,
        },
        Scenario {
            name: "lookups",
            args: vec![
                "--db".into(),
                keyed_db.to_string_lossy().into_owned(),
                "get".into(),
                "objects".into(),
                "--keys".into(),
                d("keys.txt"),
                "--format".into(),
                "csv".into(),
            ],
            fresh: None,
            serve: None,
        },
    ];
    let mut scenarios = scenarios.into_iter().collect::<Vec<_>>();
    // The server under pgbench, at one client and at 256 (where the
    // study's profile-guided MariaDB lost what it gained at one).
    let serve_rows = 1_000_000u64;
    if Command::new("pgbench").arg("--version").output().is_ok() {
        let serve_db = dir.join(format!("serve-{serve_rows}.db"));
        if !serve_db.exists() {
            write_serve_rows(dir, serve_rows)?;
            run(
                Command::new(release).args([
                    "--db",
                    &serve_db.to_string_lossy(),
                    "load",
                    "--quiet",
                    "--key",
                    "id",
                    "objects",
                    &d("serve-rows.csv"),
                ]),
                "loading the served table",
            )?;
            let _ = std::fs::remove_file(dir.join("serve-rows.csv"));
        }
        let script = dir.join("point.sql");
        std::fs::write(
            &script,
            format!(
                "\\set id random(1, {serve_rows})\nSELECT id, a, b FROM objects WHERE id = :id;\n"
            ),
        )
        .map_err(|e| format!("{}: {e}", script.display()))?;
        for (name, clients, transactions) in [("serve-1", 1, 20_000), ("serve-256", 256, 200)] {
            scenarios.push(Scenario {
                name,
                args: Vec::new(),
                fresh: None,
                serve: Some(Served {
                    db: serve_db.clone(),
                    script: script.clone(),
                    clients,
                    transactions,
                }),
            });
        }
    } else {
        println!(
            "== no pgbench: the serve scenarios are left out (apt-get install postgresql-client)"
        );
    }
    println!(
        "== timing: {} runs per binary and scenario, interleaved",
        o.runs
    );
    let mut times = vec![(Vec::new(), Vec::new()); scenarios.len()];
    for s in &scenarios {
        // Warm the page cache for both.
        time_one(release, s)?;
        time_one(pgo, s)?;
    }
    for r in 0..o.runs {
        for (i, s) in scenarios.iter().enumerate() {
            // Alternate which goes first.
            let (a, b) = if r % 2 == 0 {
                (release, pgo)
            } else {
                (pgo, release)
            };
            let ta = time_one(a, s)?;
            let tb = time_one(b, s)?;
            let (tr, tp) = if r % 2 == 0 { (ta, tb) } else { (tb, ta) };
            times[i].0.push(tr);
            times[i].1.push(tp);
        }
    }
    for d in scenarios.iter().filter_map(|s| s.fresh.as_ref()) {
        let _ = std::fs::remove_dir_all(d);
    }
    println!("\n| scenario | release (s) | PGO (s) | release / PGO | change |");
    println!("|---|---:|---:|---:|---:|");
    for (s, (rel, p)) in scenarios.iter().zip(&times) {
        let (mr, mp) = (median(&mut rel.clone()), median(&mut p.clone()));
        println!(
            "| {} | {mr:.3} | {mp:.3} | {:.3} | {:+.1} % |",
            s.name,
            mr / mp,
            (mp / mr - 1.0) * 100.0
        );
    }
    println!(
        "\nmedians of {} runs, each a whole process; ingest: `sluice load` of {} rows of three integers into a fresh table (in /dev/shm when there is one); json: `sluice load --format jsonl` of 440 MB of JSON lines (`sluice gen objects --seed 7`) into a fresh table beside it; q1: `sluice bench q1` (TPC-H Q1 over lineitem SF {}, 11 runs at 2 threads); lookups: `sluice get --keys` of {lookups} present keys in a keyed table of {keyed_rows} rows; serve-1 and serve-256: `sluice serve` of a table of {serve_rows} rows keyed by BIGINT under pgbench -M prepared point selects, 1 client x 20,000 and 256 clients x 200 (pgbench's wall time, connections included)",
        o.runs, o.rows, o.sf
    );
    if let Some(path) = &o.json_out {
        write_results(path, dir, release, &scenarios, &times)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options> {
        Options::parse(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn options_parse_and_refuse_what_is_wrong() {
        let o = parse(&[]).unwrap();
        assert_eq!(
            (o.scale, o.runs, o.compare, o.sf, o.rows),
            (1.0, 7, true, 1.0, 40_000_000)
        );
        let o = parse(&[
            "--scale",
            "0.02",
            "--no-compare",
            "--runs",
            "3",
            "--sf",
            "0.5",
            "--rows",
            "1000",
        ])
        .unwrap();
        assert_eq!(
            (o.scale, o.runs, o.compare, o.sf, o.rows),
            (0.02, 3, false, 0.5, 1000)
        );
        assert_eq!(o.json_out, None);
        let o = parse(&["--json-out", "r/pgo.json"]).unwrap();
        assert_eq!(o.json_out.as_deref(), Some(Path::new("r/pgo.json")));
        for bad in [
            &["--scale"][..],
            &["--scale", "x"],
            &["--runs", "0"],
            &["--sf", "-1"],
            &["--fast"],
            &["--json-out"],
            &["--json-out", "x.json", "--no-compare"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
    }
}
