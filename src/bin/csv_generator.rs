//! `csv_generator`: writes the CSV files that `ysql-bench -o copy-file`
//! loads, one per thread, with the same ids and rows as the loads.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use ysql_bench::cli::{parse_count, parse_positive};
use ysql_bench::error::EXIT_OK;
use ysql_bench::workload::basic::csv_gen::{CsvSpec, write_all};

/// Write the CSV files for `ysql-bench -o copy-file`: one per thread,
/// named like ysql_bench-t4-r1000000-f24--nr1.csv (threads, rows, field length, file 1..T).
#[derive(Parser, Debug)]
#[command(name = "csv_generator", version, allow_negative_numbers = true)]
struct Args {
    /// Rows in all files together (ids 0..N-1), as ysql-bench -r.
    #[arg(short = 'r', long, value_name = "N", default_value = "100000", value_parser = parse_count::<u64>)]
    rows: u64,
    /// Threads of the copy-file load: one file each, as ysql-bench -t.
    #[arg(short = 't', long, value_name = "N", default_value = "1", value_parser = parse_positive::<usize>)]
    threads: usize,
    /// Length of each of the four text fields, as ysql-bench -f.
    #[arg(short = 'f', long = "fields-length", value_name = "N", default_value = "24", value_parser = parse_positive::<usize>)]
    fields_length: usize,
    /// Directory to write to; must be readable by the database server.
    #[arg(short = 'd', long, value_name = "DIR", default_value = "/tmp")]
    dir: PathBuf,
    /// Seed of the data; the same seed gives the rows `ysql-bench --seed` loads.
    #[arg(long, value_name = "N", value_parser = parse_count::<u64>)]
    seed: Option<u64>,
    /// Files written at once (default: the number of cores).
    #[arg(short = 'j', long, value_name = "N", value_parser = parse_positive::<usize>)]
    jobs: Option<usize>,
}

fn main() -> ExitCode {
    let args = match ysql_bench::cli::parse_command_line::<Args>(|_, _| None) {
        Ok(a) => a,
        Err(code) => return ExitCode::from(code as u8),
    };
    // Files ysql-bench could not load are refused before a byte is written.
    if let Err(e) =
        ysql_bench::workload::kit::limits::check_table_shape(args.rows, args.fields_length)
    {
        ysql_bench::say!("error: {e}");
        return ExitCode::from(e.exit_code() as u8);
    }
    // The files must fit: a disk filled up harms more than this run.
    let need = estimated_bytes(args.rows, args.fields_length);
    if let Some(free) = free_bytes(&args.dir)
        && need > free
    {
        ysql_bench::say!(
            "error: the files would take about {:.1} GB but {} has {:.1} GB free: free some space, write elsewhere with -d DIR, or make fewer rows or shorter fields",
            need as f64 / 1e9,
            args.dir.display(),
            free as f64 / 1e9
        );
        return ExitCode::from(2);
    }
    let seed = args.seed.unwrap_or_else(rand::random::<u64>);
    let spec = CsvSpec {
        dir: args.dir,
        rows: args.rows,
        threads: args.threads,
        field_len: args.fields_length,
        seed,
        parallel: args.jobs.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        }),
    };
    let start = Instant::now();
    match write_all(&spec) {
        Ok((paths, bytes)) => {
            let secs = start.elapsed().as_secs_f64();
            // The paths on stdout, for scripts; a closed pipe is no error.
            let mut stdout = std::io::stdout().lock();
            for p in &paths {
                let _ = writeln!(stdout, "{}", p.display());
            }
            ysql_bench::say!(
                "wrote {} rows in {} file{}, {:.1} MB in {:.3} s ({:.1} MB/s), seed {seed}",
                spec.rows,
                paths.len(),
                if paths.len() == 1 { "" } else { "s" },
                bytes as f64 / 1e6,
                secs,
                bytes as f64 / 1e6 / secs.max(1e-9)
            );
            ExitCode::from(EXIT_OK as u8)
        }
        Err(e) => {
            ysql_bench::say!("error: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
}

/// About how many bytes the files of `rows` rows take: four fields, the id
/// (at most 10 digits), four commas and a newline per row.
fn estimated_bytes(rows: u64, field_len: usize) -> u64 {
    rows.saturating_mul((field_len as u64).saturating_mul(4).saturating_add(15))
}

/// Space free for an ordinary user in `dir`'s file system, if it can be
/// told.
fn free_bytes(dir: &std::path::Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: a valid C string and a buffer of the right type; statvfs
    // only writes into the buffer, and it is read only on success.
    let r = unsafe { libc::statvfs(path.as_ptr(), st.as_mut_ptr()) };
    if r != 0 {
        return None;
    }
    // SAFETY: statvfs returned 0, so it filled the buffer.
    let st = unsafe { st.assume_init() };
    // u64 on 64-bit Linux, narrower elsewhere.
    #[allow(clippy::unnecessary_cast)]
    Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}
