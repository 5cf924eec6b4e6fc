//! The table: per program, the medians of wall and CPU time of both
//! builds and their ratios, and the geometric mean of the ratios.

use std::fmt::Write as _;

use super::Row;
use super::measure::Run;
use crate::stats::Summary;

/// Stock over bwos, round by round, summarised (above 1: bwos faster or
/// cheaper); `None` without pairs.
pub fn ratio(row: &Row, cost: fn(&Run) -> f64) -> Option<Summary> {
    let stock: Vec<f64> = row.stock.iter().map(cost).collect();
    let bwos: Vec<f64> = row.bwos.iter().map(cost).collect();
    Summary::of_ratios(&stock, &bwos)
}

/// The geometric mean of `ratios`; `None` if there are none.
pub fn geometric_mean(ratios: &[f64]) -> Option<f64> {
    if ratios.is_empty() {
        return None;
    }
    let log_sum: f64 = ratios.iter().map(|r| r.ln()).sum();
    Some((log_sum / ratios.len() as f64).exp())
}

fn median(runs: &[Run], cost: fn(&Run) -> f64) -> Option<f64> {
    Summary::of(&runs.iter().map(cost).collect::<Vec<_>>()).map(|s| s.median)
}

fn wall(run: &Run) -> f64 {
    run.wall_ms
}

fn cpu(run: &Run) -> f64 {
    run.cpu_ms
}

fn switches(run: &Run) -> f64 {
    (run.voluntary_switches + run.involuntary_switches) as f64
}

/// The table as text.
pub fn render(rows: &[Row]) -> String {
    let mut out = String::from(
        "real rayon programs, stock rayon-core vs the bwos drop-in (medians; ratio = stock/bwos, \
         median of the per-round ratios: above 1 = bwos faster / cheaper)\n",
    );
    let line = |out: &mut String, cells: [&str; 10]| {
        writeln!(
            out,
            "{:<8} {:>9} {:>9} {:>6} {:>13} {:>9} {:>9} {:>6} {:>13} {:>11}",
            cells[0],
            cells[1],
            cells[2],
            cells[3],
            cells[4],
            cells[5],
            cells[6],
            cells[7],
            cells[8],
            cells[9]
        )
        .expect("writing to a String");
    };
    line(
        &mut out,
        [
            "program",
            "wall ms",
            "bwos",
            "ratio",
            "range",
            "cpu ms",
            "bwos",
            "ratio",
            "range",
            "ctx sw s/b",
        ],
    );
    let (mut wall_ratios, mut cpu_ratios) = (Vec::new(), Vec::new());
    let number = |value: Option<f64>, digits: usize| {
        value.map_or("n/a".to_string(), |v| format!("{v:.digits$}"))
    };
    for row in rows {
        let (wall_ratio, cpu_ratio) = (ratio(row, wall), ratio(row, cpu));
        wall_ratios.extend(wall_ratio.map(|r| r.median));
        cpu_ratios.extend(cpu_ratio.map(|r| r.median));
        let range =
            |r: Option<Summary>| r.map_or("n/a".into(), |r| format!("[{:.2}-{:.2}]", r.min, r.max));
        line(
            &mut out,
            [
                row.app,
                &number(median(&row.stock, wall), 1),
                &number(median(&row.bwos, wall), 1),
                &number(wall_ratio.map(|r| r.median), 3),
                &range(wall_ratio),
                &number(median(&row.stock, cpu), 1),
                &number(median(&row.bwos, cpu), 1),
                &number(cpu_ratio.map(|r| r.median), 3),
                &range(cpu_ratio),
                &format!(
                    "{}/{}",
                    number(median(&row.stock, switches), 0),
                    number(median(&row.bwos, switches), 0)
                ),
            ],
        );
    }
    line(
        &mut out,
        [
            "geomean",
            "",
            "",
            &number(geometric_mean(&wall_ratios), 3),
            "",
            "",
            "",
            &number(geometric_mean(&cpu_ratios), 3),
            "",
            "",
        ],
    );
    for row in rows {
        write!(out, "{}: {}, {}", row.app, row.package, row.lock).expect("writing to a String");
        writeln!(
            out,
            "; the drop-in's lock keeps it and adds {} package(s) (bwos and its dependencies)",
            row.added_to_lock.len(),
        )
        .expect("writing to a String");
        writeln!(out, "  {} {}", row.app, row.arguments.join(" ")).expect("writing to a String");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(wall_ms: f64, cpu_ms: f64) -> Run {
        Run {
            wall_ms,
            cpu_ms,
            user_ms: cpu_ms,
            sys_ms: 0.0,
            voluntary_switches: 10,
            involuntary_switches: 2,
        }
    }

    fn row(app: &'static str, stock: &[(f64, f64)], bwos: &[(f64, f64)]) -> Row {
        Row {
            app,
            package: format!("{app}-1.0.0"),
            lock: if app == "b" {
                "no Cargo.lock published: resolved here".into()
            } else {
                "its published Cargo.lock".into()
            },
            added_to_lock: vec!["bwos 0.1.0".into()],
            arguments: vec!["in".into()],
            stock: stock.iter().map(|&(w, c)| run(w, c)).collect(),
            bwos: bwos.iter().map(|&(w, c)| run(w, c)).collect(),
        }
    }

    /// Catches ratios taken the wrong way round (bwos/stock) or of the
    /// medians instead of round by round, and an arithmetic mean.
    #[test]
    fn ratios_are_stock_over_bwos_per_round_and_averaged_geometrically() {
        // Round ratios of wall: 2, 1, 4 -> median 2; of CPU: 0.5 each.
        let a = row(
            "a",
            &[(20.0, 10.0), (10.0, 10.0), (40.0, 10.0)],
            &[(10.0, 20.0), (10.0, 20.0), (10.0, 20.0)],
        );
        assert_eq!(ratio(&a, wall).unwrap().median, 2.0);
        assert_eq!(ratio(&a, cpu).unwrap().median, 0.5);
        let b = row("b", &[(10.0, 10.0)], &[(20.0, 5.0)]);
        // Wall: 2 and 0.5 -> 1; CPU: 0.5 and 2 -> 1.
        let table = render(&[a, b]);
        let geomean = table.lines().find(|l| l.starts_with("geomean")).unwrap();
        assert_eq!(
            geomean.split_whitespace().collect::<Vec<_>>(),
            ["geomean", "1.000", "1.000"],
            "{table}"
        );
        assert!(table.contains("no Cargo.lock published"), "{table}");
        assert!(table.contains("12/12"), "{table}");
        assert_eq!(geometric_mean(&[]), None);
        assert!((geometric_mean(&[1.0, 4.0]).unwrap() - 2.0).abs() < 1e-12);
    }
}
