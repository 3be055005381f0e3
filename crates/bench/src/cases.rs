//! A run of the cases, then S3 and S4: what it holds from setup to
//! teardown ([`Run`]), the exports after every case, and the tables at the
//! end. Every step that adds results exports them again, so a late failure
//! loses nothing.

use crate::args::BenchArgs;
use crate::benchmark::{self, Context as RunContext};
use crate::bgload::Launcher;
use crate::export::{
    self, CsvExporter, Exporter, Exports, HtmlExporter, JsonExporter, MarkdownExporter, SvgExporter,
};
use crate::flusher::FlusherControl;
use crate::output::{self, table};
use crate::plan::Plan;
use crate::producer;
use crate::protocol;
use crate::report::{self, BenchReport, SCHEMA_VERSION};
use crate::scenario;
use crate::signal;
use crate::target::{self, Target};
use crate::{s3, s4};

/// Runs every case of `plan` on `target` with the global lock held (in
/// `flusher`), then S3 and S4, puts the machine back and prints the
/// tables: the exit code ([`Run::finish`]).
pub(crate) fn run_cases(
    args: &BenchArgs,
    plan: &Plan,
    fio: Option<String>,
    launcher: Launcher,
    target: Target,
    flusher: FlusherControl,
    warnings: Vec<output::Warning>,
) -> anyhow::Result<i32> {
    let mut report = empty_report(args, &target, &flusher);
    report.environment.rt = producer::probe(&plan.rt);
    let mut run = Run {
        rt: plan.rt.clone(),
        report,
        exports: exports(args, plan),
        tracer: tracer(args),
        launcher,
        target,
        flusher,
        warnings,
        failed: false,
    };
    run.announce(plan);
    run.cases(plan);
    if plan.s3 && !signal::interrupted() {
        run.s3(args)?;
    }
    if plan.s4 && !signal::interrupted() {
        run.s4(args, plan, fio);
    }
    run.finish(args, plan)
}

/// `--explain`: a tracing session, or `None` (with the reason printed)
/// when tracefs cannot give one; the cases then run untraced.
fn tracer(args: &BenchArgs) -> Option<rtrec_trace::Tracer> {
    args.explain.tracer().unwrap_or_else(|sentence| {
        eprintln!("rtrec bench: {sentence}");
        None
    })
}

/// The exports asked for on the command line (S4's share plot beside
/// `--plot` when S4 runs).
fn exports(args: &BenchArgs, plan: &Plan) -> Exports {
    let mut exports = Exports::default();
    if let Some(p) = &args.json {
        exports.add(Box::new(JsonExporter) as Box<dyn Exporter>, p.clone());
    }
    if let Some(p) = &args.plot {
        exports.add(Box::new(SvgExporter), p.clone());
        if plan.s4 && p.as_os_str() != export::STDOUT {
            let beside = export::s4_plot::path_beside(p);
            eprintln!(
                "rtrec bench: the S4 throughput shares are drawn to {}",
                beside.display()
            );
            exports.add(Box::new(export::s4_plot::S4PlotExporter), beside);
        }
    }
    if let Some(p) = &args.html {
        exports.add(Box::new(HtmlExporter), p.clone());
    }
    if let Some(p) = &args.export_csv {
        exports.add(Box::new(CsvExporter), p.clone());
    }
    if let Some(p) = &args.export_markdown {
        exports.add(Box::new(MarkdownExporter), p.clone());
    }
    exports
}

/// The report before any case: the environment, nothing measured yet.
fn empty_report(args: &BenchArgs, target: &Target, flusher: &FlusherControl) -> BenchReport {
    BenchReport {
        schema_version: SCHEMA_VERSION,
        environment: target::environment(
            target,
            args.device.as_ref(),
            flusher.found(),
            flusher.can_switch(),
        ),
        warnings: Vec::new(),
        complete: false,
        interrupted: false,
        cases: Vec::new(),
        s3: None,
        s4: None,
    }
}

/// A run in progress: what it holds from setup to teardown, and the report
/// it fills.
struct Run {
    launcher: Launcher,
    rt: producer::RtRequest,
    target: Target,
    flusher: FlusherControl,
    tracer: Option<rtrec_trace::Tracer>,
    warnings: Vec<output::Warning>,
    exports: Exports,
    report: BenchReport,
    /// A case or S4 failed (exit code 1).
    failed: bool,
}

impl Run {
    /// The one line before the cases: how many, where, and how long.
    fn announce(&self, plan: &Plan) {
        let env = &self.report.environment;
        eprintln!(
            "rtrec bench: {} cases on {} ({}, {}, {}); timed loops take about {} (plus setup)",
            plan.cases.len(),
            env.path,
            env.filesystem,
            env.mount_options,
            env.device,
            rtrec_units::format_duration(plan.loop_ns())
        );
        eprintln!("rtrec bench: every timed thread: {}", env.rt.line());
        for w in &self.warnings {
            eprintln!("rtrec bench: warning: {w}");
        }
    }

    /// Runs every case of the plan until a stop signal, one log line and
    /// one export after each.
    fn cases(&mut self, plan: &Plan) {
        for (i, (s, p)) in plan.cases.iter().enumerate() {
            if signal::interrupted() {
                break;
            }
            let warned = self.warnings.len();
            let mut ctx = RunContext {
                work: &self.target.work,
                launcher: &self.launcher,
                flusher: &mut self.flusher,
                warnings: &mut self.warnings,
                tracer: self.tracer.as_mut(),
                rt: &self.rt,
            };
            let r = benchmark::run_case(s, p, &mut ctx);
            for w in &self.warnings[warned..] {
                eprintln!("rtrec bench: warning: {w}");
            }
            // What is left, from the plan: the timed loops of the cases to come.
            let left_ns: u64 = plan.cases[i + 1..].iter().map(|(_, p)| p.loop_ns()).sum();
            let left = if left_ns > 0 {
                format!(
                    "; about {} of timed loops left",
                    rtrec_units::format_duration(left_ns)
                )
            } else {
                String::new()
            };
            eprintln!(
                "rtrec bench: [{}/{}] {}{left}",
                i + 1,
                plan.cases.len(),
                case_line(&r)
            );
            self.failed |= r.error.is_some();
            self.report.cases.push(r);
            self.report.environment.emulator = self.target.emulator_stats();
            self.report.fill_floor_ratios();
            self.report.warnings = self.warnings.iter().map(ToString::to_string).collect();
            self.export();
        }
    }

    /// S3 (fsync-tester beside a streaming writer, on images of its own;
    /// needs root), then an export.
    fn s3(&mut self, args: &BenchArgs) -> anyhow::Result<()> {
        if self.flusher.can_switch() {
            let rounds = args.rounds.unwrap_or(s3::DEFAULT_ROUNDS);
            let emulator = match &args.device {
                Some(d) => target::emulator(d)?,
                None => None,
            };
            self.report.s3 = Some(s3::run(
                &self.launcher,
                rounds,
                args.image_dir.as_deref(),
                emulator.as_ref(),
            ));
        } else {
            eprintln!("rtrec bench: S3 needs root (its own ext4 images); skipped");
        }
        self.export();
        Ok(())
    }

    /// S4 (BFQ weights on our own loop device; needs root and no `--dir`),
    /// then an export.
    fn s4(&mut self, args: &BenchArgs, plan: &Plan, fio: Option<String>) {
        match (self.flusher.journal(), self.target.loop_device()) {
            (Some(journal), Some(device)) => {
                let sizes = if args.request_sizes.is_empty() {
                    s4::SIZES.to_vec()
                } else {
                    args.request_sizes.clone()
                };
                let ctx = s4::S4Context {
                    launcher: &self.launcher,
                    journal,
                    work: &self.target.work,
                    device,
                    cell: args.cell.unwrap_or(s4::DEFAULT_CELL),
                    sizes: &sizes,
                    writes: args.writes.unwrap_or(protocol::DEFAULT_WRITES),
                    schedulers: &plan.s4_schedulers,
                    fio,
                };
                match s4::run(&ctx) {
                    Ok(r) => self.report.s4 = Some(r),
                    Err(e) => {
                        self.failed = true;
                        eprintln!("rtrec bench: S4: {e:#}");
                    }
                }
            }
            _ => {
                eprintln!("rtrec bench: S4 needs root and our own ext4 image (not --dir); skipped")
            }
        }
        self.export();
    }

    /// Writes every export of the report so far; a failure is printed, the
    /// run goes on.
    fn export(&self) {
        if let Err(e) = self.exports.write_all(&self.report) {
            eprintln!("rtrec bench: {e:#}");
        }
    }

    /// Puts the machine back (dirty settings, tracefs instance, target),
    /// exports the final report, prints the tables and returns the exit
    /// code: 130 interrupted, 1 a case failed, 0 otherwise.
    fn finish(self, args: &BenchArgs, plan: &Plan) -> anyhow::Result<i32> {
        let Run {
            target,
            mut flusher,
            tracer,
            mut warnings,
            exports,
            mut report,
            failed,
            ..
        } = self;
        report.interrupted = signal::interrupted();
        report.complete = !report.interrupted && report.cases.len() == plan.cases.len();
        // FON: the values found at start, which must now be in force again.
        let restored = flusher.set(scenario::Flusher::On).map(|_| ());
        if let Some((found, now)) = flusher.changed() {
            warnings.push(output::Warning::DirtySettingsChanged { found, now });
        }
        let restored = restored.and(flusher.finish());
        if let Err(e) = tracer.map_or(Ok(()), |t| t.session.remove()) {
            eprintln!("rtrec bench: removing the tracefs instance: {e}");
        }
        let removed = target.remove();
        report.warnings = warnings.iter().map(ToString::to_string).collect();
        let exported = exports.write_all(&report);
        // With `--json -` the JSON is stdout's; the table goes to stderr.
        let text = render(args, &report, &warnings);
        if exports.uses_stdout() {
            eprint!("{text}");
        } else {
            print!("{text}");
        }
        restored?;
        removed?;
        exported?;
        Ok(if report.interrupted {
            130
        } else if failed {
            1
        } else {
            0
        })
    }
}

/// The tables at the end: the cases, S3, S4, `--histogram`'s histograms
/// and the warnings.
fn render(args: &BenchArgs, report: &BenchReport, warnings: &[output::Warning]) -> String {
    let mut text = table::render_results(report);
    if let Some(r) = &report.s3 {
        text.push_str(&table::render_s3(r));
    }
    if let Some(r) = &report.s4 {
        text.push_str(&table::render_s4(r));
    }
    if args.histogram {
        for c in report
            .cases
            .iter()
            .filter(|c| !c.write_samples_ns.is_empty())
        {
            text.push_str(&format!(
                "\n{}: latency of the timed call, reported set\n",
                c.name
            ));
            text.push_str(&output::histogram::of_samples(&c.write_samples_ns));
        }
    }
    if !warnings.is_empty() {
        text.push('\n');
        for w in warnings {
            text.push_str(&format!("warning: {w}\n"));
        }
    }
    text
}

/// One line for the log after each case.
fn case_line(c: &report::CaseResult) -> String {
    match (&c.error, c.write_ns) {
        (Some(e), _) => format!("{}: FAILED: {e}", c.name),
        (None, Some(w)) => format!(
            "{}: {} sets, max {}, p99.9 {}, mean {}, missed {}",
            c.name,
            c.sets.len(),
            rtrec_units::format_duration(w.max),
            rtrec_units::format_duration(w.p999),
            rtrec_units::format_duration(w.mean),
            c.missed_periods
        ),
        (None, None) => format!(
            "{}: no measurement{}",
            c.name,
            if c.interrupted { " (interrupted)" } else { "" }
        ),
    }
}
