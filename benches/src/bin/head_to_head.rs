//! The measuring tool of the head-to-head benchmark
//! (`benches/head-to-head/run.sh`, results in BENCHMARKS.md): it starts a
//! worker process (Kafka Connect's Java worker or ours), watches it from the
//! outside and prints one result line; and it runs the bare-client baseline
//! (a plain rdkafka producer and consumer moving the same bytes).
//!
//! ```text
//! head_to_head lines FILE N
//! head_to_head free-port
//! head_to_head measure NAME source|committed-source|sink N HOST:PORT BOOTSTRAP TOPIC OUTFILE LOG -- CMD ARGS...
//! head_to_head bare-produce BOOTSTRAP FROM_TOPIC TO_TOPIC N
//! head_to_head bare-consume BOOTSTRAP TOPIC N OUTFILE
//! ```
//!
//! What is measured, the same way for every process:
//! - **REST ready**: exec until `GET /` answers 200 (polled every 2 ms);
//! - **first record**: exec until the first record is delivered (source: the
//!   topic's high watermark is above 0; sink: the output file has a line);
//! - **steady rate** and **CPU per million records**: between the moments
//!   10% and 90% of the records were delivered, so that neither JVM warm-up
//!   nor the sink's last buffered lines (written at the next offset flush)
//!   decide the figure. CPU is user + system time of the whole process (all
//!   threads: the JVM's compiler and GC threads, librdkafka's threads) from
//!   `/proc/PID/stat`;
//! - **peak RSS**: `VmHWM` of `/proc/PID/status` when the last record arrived.
//!
//! `committed-source` counts a source's records as a `read_committed`
//! consumer of the topic reads them (exactly-once workers write
//! transaction markers, which the high watermark counts too). With
//! `H2H_CREATE=FILE` (a distributed worker, which takes no connector file),
//! the tool posts FILE's JSON to `POST /connectors` once REST answers.

// Its results are its standard output (one tab-separated line per run).
#![allow(clippy::print_stdout)]

use std::error::Error;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext};
use rdkafka::{ClientContext, Message, Offset, TopicPartitionList};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// A run gives up after this long.
const DEADLINE: Duration = Duration::from_secs(900);

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("head_to_head: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(args: &[String]) -> Result<()> {
    let arg = |i: usize, what: &str| -> Result<&str> {
        args.get(i)
            .map(String::as_str)
            .ok_or_else(|| format!("missing argument {i}: {what} (see the file's docs)").into())
    };
    let number = |i: usize, what: &str| -> Result<u64> {
        let v = arg(i, what)?;
        v.parse()
            .map_err(|_| format!("{what} must be a number, got '{v}'").into())
    };
    match arg(0, "subcommand")? {
        "lines" => write_lines(arg(1, "file")?, number(2, "line count")?),
        "free-port" => {
            let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
            println!("{}", listener.local_addr()?.port());
            Ok(())
        }
        "measure" => {
            let split = args
                .iter()
                .position(|a| a == "--")
                .ok_or("measure: no '--' before the worker's command")?;
            let direction = match arg(2, "direction")? {
                "source" => Direction::Source,
                "committed-source" => Direction::CommittedSource,
                "sink" => Direction::Sink,
                other => {
                    return Err(format!(
                        "direction must be source, committed-source or sink, got '{other}'"
                    )
                    .into())
                }
            };
            let watch = Watch {
                name: arg(1, "name")?.to_string(),
                direction,
                records: number(3, "records")?,
                rest: arg(4, "rest host:port")?.to_string(),
                bootstrap: arg(5, "bootstrap servers")?.to_string(),
                topic: arg(6, "topic")?.to_string(),
                out: arg(7, "output file")?.to_string(),
                log: arg(8, "log file")?.to_string(),
            };
            measure(&watch, &args[split + 1..])
        }
        "bare-produce" => bare_produce(
            arg(1, "bootstrap servers")?,
            arg(2, "topic to copy")?,
            arg(3, "topic to write")?,
            number(4, "records")?,
        ),
        "bare-consume" => bare_consume(
            arg(1, "bootstrap servers")?,
            arg(2, "topic")?,
            number(3, "records")?,
            arg(4, "output file")?,
        ),
        other => Err(format!("unknown subcommand '{other}'").into()),
    }
}

/// The input file: N numbered lines of about 90 bytes.
fn write_lines(path: &str, n: u64) -> Result<()> {
    let mut out = BufWriter::new(File::create(path)?);
    for i in 0..n {
        writeln!(
            out,
            "{i:08} the quick brown fox jumps over the lazy dog; a line of the head-to-head run"
        )?;
    }
    out.flush()?;
    Ok(())
}

#[derive(Clone, Copy, PartialEq)]
enum Direction {
    Source,
    /// A source counted by a `read_committed` reader.
    CommittedSource,
    Sink,
}

struct Watch {
    name: String,
    direction: Direction,
    records: u64,
    rest: String,
    bootstrap: String,
    topic: String,
    out: String,
    log: String,
}

/// CPU seconds (user + system, all threads) of a process so far.
fn cpu_seconds(pid: u32) -> Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat
        .rsplit_once(')')
        .ok_or("unexpected /proc/PID/stat format")?
        .1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line: 11 and 12 here.
    let ticks = |i: usize| -> Result<f64> {
        Ok(fields
            .get(i)
            .ok_or("short /proc/PID/stat")?
            .parse::<f64>()?)
    };
    Ok((ticks(11)? + ticks(12)?) / clock_ticks())
}

fn clock_ticks() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// Peak resident set size in MiB (`VmHWM`).
fn peak_rss_mib(pid: u32) -> Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .ok_or("no VmHWM in /proc/PID/status")?;
    let kib: f64 = line
        .split_whitespace()
        .nth(1)
        .ok_or("no VmHWM value")?
        .parse()?;
    Ok(kib / 1024.0)
}

/// True once `GET /` on host:port answers 200.
fn rest_ready(addr: &str) -> bool {
    let Ok(mut stream) = TcpStream::connect(addr) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = format!("GET / HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.1 200")
}

/// Counts the lines of a file as it grows.
struct LineCounter {
    file: Option<File>,
    path: String,
    lines: u64,
    buf: Vec<u8>,
}

impl LineCounter {
    fn count(&mut self) -> Result<u64> {
        if self.file.is_none() {
            match File::open(&self.path) {
                Ok(f) => self.file = Some(f),
                Err(_) => return Ok(0),
            }
        }
        if let Some(file) = self.file.as_mut() {
            loop {
                let n = file.read(&mut self.buf)?;
                if n == 0 {
                    break;
                }
                self.lines += self.buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
            }
        }
        Ok(self.lines)
    }
}

/// How far a worker got: records in the topic (source), records a
/// `read_committed` reader has read (and whether it was assigned the
/// topic yet), or lines in the file (sink).
enum Progress {
    Topic(BaseConsumer, String),
    Committed(BaseConsumer, String, bool, u64),
    File(LineCounter),
}

impl Progress {
    fn delivered(&mut self) -> Result<u64> {
        match self {
            Progress::Topic(consumer, topic) => {
                match consumer.fetch_watermarks(topic, 0, Duration::from_secs(5)) {
                    Ok((_, high)) => Ok(high.max(0) as u64),
                    // Not created yet: nothing delivered.
                    Err(_) => Ok(0),
                }
            }
            Progress::Committed(consumer, topic, assigned, read) => {
                if !*assigned {
                    // Assigned once the worker created the topic.
                    if consumer
                        .fetch_watermarks(topic, 0, Duration::from_secs(5))
                        .is_err()
                    {
                        return Ok(0);
                    }
                    let mut tpl = TopicPartitionList::new();
                    tpl.add_partition_offset(topic, 0, Offset::Beginning)?;
                    consumer.assign(&tpl)?;
                    *assigned = true;
                }
                while let Some(message) = consumer.poll(Duration::ZERO) {
                    if message.is_ok() {
                        *read += 1;
                    }
                }
                Ok(*read)
            }
            Progress::File(counter) => counter.count(),
        }
    }
}

fn measure(watch: &Watch, command: &[String]) -> Result<()> {
    let (program, args) = command
        .split_first()
        .ok_or("no worker command after '--'")?;
    let mut progress = match watch.direction {
        Direction::Source => {
            let consumer: BaseConsumer = ClientConfig::new()
                .set("bootstrap.servers", &watch.bootstrap)
                .create()?;
            Progress::Topic(consumer, watch.topic.clone())
        }
        Direction::CommittedSource => {
            let consumer: BaseConsumer = ClientConfig::new()
                .set("bootstrap.servers", &watch.bootstrap)
                .set("group.id", "head-to-head-committed")
                .set("enable.auto.commit", "false")
                .set("isolation.level", "read_committed")
                .create()?;
            Progress::Committed(consumer, watch.topic.clone(), false, 0)
        }
        Direction::Sink => {
            let _ = std::fs::remove_file(&watch.out);
            Progress::File(LineCounter {
                file: None,
                path: watch.out.clone(),
                lines: 0,
                buf: vec![0; 1 << 20],
            })
        }
    };
    let log = File::create(&watch.log)?;
    let started = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .map_err(|e| format!("cannot start {program}: {e}"))?;
    let result = watch_child(watch, &mut child, started, &mut progress);
    stop(&mut child);
    result
}

/// SIGTERM (a worker leaves its consumer group), SIGKILL after 30 s.
fn stop(child: &mut Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn watch_child(
    watch: &Watch,
    child: &mut Child,
    started: Instant,
    progress: &mut Progress,
) -> Result<()> {
    let pid = child.id();
    let mut ready = None;
    let mut first = None;
    let mut marks = Marks::new(watch.records, pid);
    loop {
        if started.elapsed() > DEADLINE {
            return Err(format!(
                "{}: {:?} after start, not all {} records delivered (log: {})",
                watch.name, DEADLINE, watch.records, watch.log
            )
            .into());
        }
        if let Some(status) = child.try_wait()? {
            return Err(format!(
                "{}: the worker exited ({status}); see {}",
                watch.name, watch.log
            )
            .into());
        }
        if ready.is_none() && rest_ready(&watch.rest) {
            ready = Some(started.elapsed());
            if let Ok(file) = std::env::var("H2H_CREATE") {
                create_connector(&watch.rest, &std::fs::read_to_string(&file)?, started)?;
            }
        }
        let delivered = progress.delivered()?;
        let now = started.elapsed();
        if delivered > 0 && first.is_none() {
            first = Some(now);
        }
        marks.observe(delivered)?;
        if delivered >= watch.records && ready.is_some() {
            let cpu_total = cpu_seconds(pid)?;
            let rss = peak_rss_mib(pid)?;
            let (rate, cpu_per_million) = marks.steady()?;
            let (Some(first), Some(ready)) = (first, ready) else {
                return Err("internal: the last record came before the first".into());
            };
            let direction = match watch.direction {
                Direction::Source => "source",
                Direction::CommittedSource => "committed-source",
                Direction::Sink => "sink",
            };
            if delivered > watch.records {
                eprintln!(
                    "{}: {delivered} records delivered, {} expected (duplicates?)",
                    watch.name, watch.records
                );
            }
            // name direction records rest_ready_ms first_record_ms rec_per_s cpu_s_per_M cpu_total_s peak_rss_mib done_s
            println!(
                "{}\t{direction}\t{}\t{:.0}\t{:.0}\t{:.0}\t{:.3}\t{:.2}\t{:.1}\t{:.2}",
                watch.name,
                watch.records,
                ready.as_secs_f64() * 1e3,
                first.as_secs_f64() * 1e3,
                rate,
                cpu_per_million,
                cpu_total,
                rss,
                now.as_secs_f64(),
            );
            return Ok(());
        }
        // Fine-grained until the first record (the start-up figures), then coarser.
        let pause = if first.is_none() || ready.is_none() {
            2
        } else {
            20
        };
        std::thread::sleep(Duration::from_millis(pause));
    }
}

/// `POST /connectors` with `body` until the worker takes it (a distributed
/// worker answers 409 or 5xx until it has joined its group).
fn create_connector(addr: &str, body: &str, started: Instant) -> Result<()> {
    loop {
        let mut stream = TcpStream::connect(addr)?;
        stream.set_read_timeout(Some(Duration::from_secs(90)))?;
        write!(
            stream,
            "POST /connectors HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )?;
        let mut reply = String::new();
        stream.read_to_string(&mut reply)?;
        if reply.starts_with("HTTP/1.1 201") {
            return Ok(());
        }
        if started.elapsed() > DEADLINE {
            return Err(format!("POST /connectors was not accepted: {reply}").into());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Counts acknowledged records.
struct Acks {
    acked: AtomicU64,
    failed: AtomicU64,
}

impl ClientContext for Acks {}

impl ProducerContext for Acks {
    type DeliveryOpaque = ();
    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        match result {
            Ok(_) => self.acked.fetch_add(1, Ordering::Relaxed),
            Err(_) => self.failed.fetch_add(1, Ordering::Relaxed),
        };
    }
}

/// Reads N record values from partition 0 of a topic into memory.
fn load_values(bootstrap: &str, topic: &str, n: u64) -> Result<Vec<Option<Vec<u8>>>> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "head-to-head-loader")
        .set("enable.auto.commit", "false")
        .create()?;
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Beginning)?;
    consumer.assign(&tpl)?;
    let mut values = Vec::with_capacity(n as usize);
    let started = Instant::now();
    while (values.len() as u64) < n {
        if started.elapsed() > DEADLINE {
            return Err(format!("read only {} of {n} records of {topic}", values.len()).into());
        }
        if let Some(message) = consumer.poll(Duration::from_millis(200)) {
            values.push(message?.payload().map(<[u8]>::to_vec));
        }
    }
    Ok(values)
}

/// The time and CPU of process `pid` when 10% and 90% of the records are
/// done: the steady part of a run, for a watched worker and for the bare
/// client (this process) alike.
struct Marks {
    total: u64,
    pid: u32,
    low: Option<(Instant, f64)>,
    high: Option<(Instant, f64)>,
}

impl Marks {
    fn new(total: u64, pid: u32) -> Self {
        Marks {
            total,
            pid,
            low: None,
            high: None,
        }
    }

    fn observe(&mut self, done: u64) -> Result<()> {
        if self.low.is_none() && done >= self.total / 10 {
            self.low = Some((Instant::now(), cpu_seconds(self.pid)?));
        }
        if self.high.is_none() && done >= self.total - self.total / 10 {
            self.high = Some((Instant::now(), cpu_seconds(self.pid)?));
        }
        Ok(())
    }

    /// Records per second and CPU seconds per million records between the marks.
    fn steady(&self) -> Result<(f64, f64)> {
        let (Some(low), Some(high)) = (self.low, self.high) else {
            return Err("internal: a mark was passed without a sample".into());
        };
        let steady = (self.total - 2 * (self.total / 10)) as f64;
        let rate = steady / (high.0 - low.0).as_secs_f64().max(1e-9);
        Ok((rate, (high.1 - low.1) / steady * 1e6))
    }

    fn print(&self, name: &str) -> Result<()> {
        let (rate, cpu_per_million) = self.steady()?;
        // Same columns as `measure`; the process figures do not apply.
        println!(
            "{name}\t{}\t-\t-\t{rate:.0}\t{cpu_per_million:.3}\t-\t-\t-",
            self.total
        );
        Ok(())
    }
}

/// The same serialized values as the worker wrote, produced again by a bare
/// rdkafka producer with the worker's source producer settings.
fn bare_produce(bootstrap: &str, from: &str, to: &str, n: u64) -> Result<()> {
    let values = load_values(bootstrap, from, n)?;
    let producer: rdkafka::producer::BaseProducer<Acks> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        // What the worker's source producer sets (connect-runtime's source task).
        .set("acks", "all")
        .set("max.in.flight.requests.per.connection", "1")
        .set("delivery.timeout.ms", "2147483647")
        .set("partitioner", "murmur2_random")
        .create_with_context(Acks {
            acked: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        })?;
    let mut marks = Marks::new(n, std::process::id());
    let started = Instant::now();
    for value in &values {
        let mut record = BaseRecord::<(), [u8]>::to(to);
        if let Some(v) = value {
            record = record.payload(v.as_slice());
        }
        loop {
            match producer.send(record) {
                Ok(()) => break,
                Err((_, back)) => {
                    record = back;
                    producer.poll(Duration::from_millis(1));
                }
            }
        }
        marks.observe(producer.context().acked.load(Ordering::Relaxed))?;
    }
    while producer.context().acked.load(Ordering::Relaxed)
        + producer.context().failed.load(Ordering::Relaxed)
        < n
    {
        if started.elapsed() > DEADLINE {
            return Err("bare producer: not every record acknowledged in time".into());
        }
        producer.poll(Duration::from_millis(5));
        marks.observe(producer.context().acked.load(Ordering::Relaxed))?;
    }
    let failed = producer.context().failed.load(Ordering::Relaxed);
    if failed > 0 {
        return Err(format!("bare producer: {failed} records failed").into());
    }
    producer.flush(Duration::from_secs(30))?;
    marks.print("bare-rdkafka\tsource")
}

/// Every value of the topic written to a file, one per line, by a bare
/// rdkafka consumer with the worker's consumer defaults.
fn bare_consume(bootstrap: &str, topic: &str, n: u64, out: &str) -> Result<()> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "head-to-head-bare")
        .set("enable.auto.commit", "false")
        // The defaults connect-rdkafka gives a worker's consumers.
        .set("fetch.wait.max.ms", "10")
        .set("fetch.queue.backoff.ms", "10")
        .create()?;
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Beginning)?;
    consumer.assign(&tpl)?;
    let mut file = BufWriter::with_capacity(64 * 1024, File::create(out)?);
    let mut marks = Marks::new(n, std::process::id());
    let mut done = 0u64;
    let started = Instant::now();
    while done < n {
        if started.elapsed() > DEADLINE {
            return Err(format!("bare consumer: read only {done} of {n} records").into());
        }
        if let Some(message) = consumer.poll(Duration::from_millis(100)) {
            let message = message?;
            file.write_all(message.payload().unwrap_or_default())?;
            file.write_all(b"\n")?;
            done += 1;
            marks.observe(done)?;
        }
    }
    file.flush()?;
    marks.print("bare-rdkafka\tsink")
}
