//! Seeded data generators for benchmarks and the demo.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Subcommand;

#[derive(Subcommand)]
pub enum GenCommand {
    /// TPC-H tables as CSV with a header (the tpchgen crate, a port of dbgen);
    /// prints the `sluice load` command for each table
    #[command(after_help = "Examples:
  sluice gen tpch --sf 0.1                       # eight CSV files in tpch/, and their load commands
  sluice gen tpch --sf 1 --table lineitem --output data
  sluice --db tpch.db gen tpch --sf 1 --load     # generate and load every table")]
    Tpch {
        /// Scale factor (1 = lineitem of 6 million rows, ~750 MB)
        #[arg(long, default_value_t = 1.0)]
        sf: f64,
        /// Only this table (default: all eight)
        #[arg(long)]
        table: Option<String>,
        /// Directory for the CSV files
        #[arg(long, short, default_value = "tpch")]
        output: PathBuf,
        /// Also load the tables into the database (--db)
        #[arg(long)]
        load: bool,
    },
    /// The three-integer CSV of the ingest benchmark: `a,b,c` per line, no
    /// header, values uniform in 0..2^31, fixed seed
    #[command(after_help = "Examples:
  sluice gen ints --size 1.28GB --output ints.csv   # the file of sluice bench ingest
  sluice gen ints --rows 1000000 --output - | head
  sluice gen ints --size 100MB --seed 7 --output other.csv")]
    Ints {
        /// Approximate file size, e.g. 1.28GB (give --size or --rows)
        #[arg(long, conflicts_with = "rows", required_unless_present = "rows")]
        size: Option<String>,
        /// Exact number of rows
        #[arg(long)]
        rows: Option<u64>,
        /// Output file, or - for standard output
        #[arg(long, short)]
        output: PathBuf,
        #[arg(long, default_value_t = 42)]
        seed: u64,
    },
    /// The rows of the JSON input benchmark, one object per line:
    /// {"source_id":"<19 digits>","chunkId":0..100000,"subChunkId":0..1000}
    /// (table "source_id TEXT, chunkId INT, subChunkId INT"); with --tsv
    /// the same rows (same seed) as tab-separated values
    #[command(after_help = "Examples:
  sluice gen objects --size 220MB --output rows.jsonl        # the JSON input benchmark
  sluice gen objects --size 220MB --tsv --output rows.tsv    # the same rows as TSV
  sluice gen objects --rows 1000 --output - | head -3")]
    Objects {
        /// Approximate size of the JSON lines, e.g. 220MB (give --size or
        /// --rows; the TSV of the same rows is smaller)
        #[arg(long, conflicts_with = "rows", required_unless_present = "rows")]
        size: Option<String>,
        /// Exact number of rows
        #[arg(long)]
        rows: Option<u64>,
        /// Write TSV instead of JSON lines
        #[arg(long)]
        tsv: bool,
        /// Output file, or - for standard output
        #[arg(long, short)]
        output: PathBuf,
        #[arg(long, default_value_t = 42)]
        seed: u64,
    },
}

pub fn run(cmd: GenCommand, db: &Path, threads: Option<usize>) -> Result<()> {
    match cmd {
        GenCommand::Tpch {
            sf,
            table,
            output,
            load,
        } => {
            std::fs::create_dir_all(&output)
                .with_context(|| format!("creating {}", output.display()))?;
            let tables: Vec<String> = match table {
                Some(t) => vec![t.to_ascii_lowercase()],
                None => crate::tpch::TABLES.iter().map(|t| t.to_string()).collect(),
            };
            let workers = sluice::exec::worker_count(threads);
            for t in &tables {
                let (path, bytes) = crate::tpch::write_table(&output, t, sf, workers)?;
                let schema = crate::tpch::schema(t).unwrap_or_default();
                eprintln!(
                    "wrote {} ({})",
                    path.display(),
                    crate::util::human_bytes(bytes)
                );
                if load {
                    let mut database = sluice::store::Database::open_writer(db)?;
                    let opts = sluice::load::LoadOptions {
                        schema: Some(schema.parse()?),
                        header: sluice::load::Header::Yes,
                        threads,
                        ..Default::default()
                    };
                    let s = sluice::load::load(
                        &mut database,
                        t,
                        &[sluice::source::Input::File(path.clone())],
                        &opts,
                    )
                    .with_context(|| format!("loading {t}"))?;
                    eprintln!("loaded {} rows into {t} in {:.2} s", s.rows, s.seconds);
                } else {
                    println!(
                        "sluice load --header --schema \"{schema}\" {t} {}",
                        path.display()
                    );
                }
            }
            Ok(())
        }
        GenCommand::Ints {
            size,
            rows,
            output,
            seed,
        } => {
            let limit = match (rows, size) {
                (Some(r), _) => Limit::Rows(r),
                (None, Some(s)) => Limit::Bytes(crate::util::parse_size(&s, "--size")?),
                (None, None) => bail!("give --size (e.g. 1.28GB) or --rows"),
            };
            let (rows, bytes) = if output.as_os_str() == "-" {
                write_ints(&mut std::io::stdout().lock(), limit, seed)?
            } else {
                write_ints_file(&output, limit, seed)?
            };
            eprintln!("wrote {rows} rows, {bytes} bytes");
            Ok(())
        }
        GenCommand::Objects {
            size,
            rows,
            tsv,
            output,
            seed,
        } => {
            let limit = match (rows, size) {
                (Some(r), _) => Limit::Rows(r),
                (None, Some(s)) => Limit::Bytes(crate::util::parse_size(&s, "--size")?),
                (None, None) => bail!("give --size (e.g. 220MB) or --rows"),
            };
            let (rows, bytes) = if output.as_os_str() == "-" {
                write_objects(&mut std::io::stdout().lock(), limit, seed, tsv)?
            } else {
                let f = std::fs::File::create(&output)
                    .with_context(|| format!("creating {}", output.display()))?;
                let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
                let r = write_objects(&mut w, limit, seed, tsv)?;
                w.flush()?;
                r
            };
            eprintln!("wrote {rows} rows, {bytes} bytes");
            Ok(())
        }
    }
}

/// Writes the JSON-benchmark rows (or their TSV); returns (rows, bytes
/// written). The size limit counts the JSON lines, so that the TSV of a
/// size holds the same rows.
pub fn write_objects(w: &mut dyn Write, limit: Limit, seed: u64, tsv: bool) -> Result<(u64, u64)> {
    let mut rng = Rng::new(seed);
    let mut buf = Vec::with_capacity(1 << 20);
    let (mut rows, mut json_bytes, mut bytes) = (0u64, 0u64, 0u64);
    loop {
        match limit {
            Limit::Rows(r) if rows >= r => break,
            Limit::Bytes(b) if json_bytes >= b => break,
            _ => {}
        }
        let id = 1_000_000_000_000_000_000 + rng.below(9_000_000_000_000_000_000);
        let (chunk, sub) = (rng.below(100_000), rng.below(1000));
        let start = buf.len();
        let row = |buf: &mut Vec<u8>, json: bool| {
            let (a, b, c, end) = if json {
                (
                    &b"{\"source_id\":\""[..],
                    &b"\",\"chunkId\":"[..],
                    &b",\"subChunkId\":"[..],
                    &b"}\n"[..],
                )
            } else {
                (&b""[..], &b"\t"[..], &b"\t"[..], &b"\n"[..])
            };
            buf.extend_from_slice(a);
            push_u64(buf, id);
            buf.extend_from_slice(b);
            push_u64(buf, chunk);
            buf.extend_from_slice(c);
            push_u64(buf, sub);
            buf.extend_from_slice(end);
        };
        row(&mut buf, true);
        json_bytes += (buf.len() - start) as u64;
        if tsv {
            buf.truncate(start);
            row(&mut buf, false);
        }
        rows += 1;
        if buf.len() >= (1 << 20) - 128 {
            w.write_all(&buf)?;
            bytes += buf.len() as u64;
            buf.clear();
        }
    }
    w.write_all(&buf)?;
    bytes += buf.len() as u64;
    Ok((rows, bytes))
}

/// A small, fast, seeded generator (SplitMix64).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

#[derive(Clone, Copy)]
pub enum Limit {
    Rows(u64),
    Bytes(u64),
}

/// Appends the decimal digits of `v` to `out`.
pub fn push_u64(out: &mut Vec<u8>, mut v: u64) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&tmp[i..]);
}

pub fn write_ints_file(path: &Path, limit: Limit, seed: u64) -> Result<(u64, u64)> {
    let f = std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    let r = write_ints(&mut w, limit, seed)?;
    w.flush()?;
    Ok(r)
}

/// Writes `a,b,c\n` rows; returns (rows, bytes).
pub fn write_ints(w: &mut dyn Write, limit: Limit, seed: u64) -> Result<(u64, u64)> {
    let mut rng = Rng::new(seed);
    let mut buf = Vec::with_capacity(1 << 20);
    let (mut rows, mut bytes) = (0u64, 0u64);
    loop {
        match limit {
            Limit::Rows(r) if rows >= r => break,
            Limit::Bytes(b) if bytes + buf.len() as u64 >= b => break,
            _ => {}
        }
        for c in 0..3 {
            if c > 0 {
                buf.push(b',');
            }
            push_u64(&mut buf, rng.below(1 << 31));
        }
        buf.push(b'\n');
        rows += 1;
        if buf.len() >= (1 << 20) - 64 {
            w.write_all(&buf)?;
            bytes += buf.len() as u64;
            buf.clear();
        }
    }
    w.write_all(&buf)?;
    bytes += buf.len() as u64;
    Ok((rows, bytes))
}
