//! The report's files: `index.html`, one static page with everything, and
//! report.md, the same tables in Markdown; and [`check`], which reads
//! the page back and says what is missing.
//!
//! Experiments write their tables as text: lines starting with `|` are
//! Markdown tables (a `|---|` line after the first row), lines starting
//! with `#` headings, anything else preformatted text (aligned columns).
//! The page shows tables as HTML tables and text as `<pre>`; the Markdown
//! file keeps tables and puts text in fenced blocks.

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::experiment::{QUICK_BANNER, Section};
use crate::header::Header;
use crate::output::annotate;
use crate::progress::minutes;

/// What the report's files are made of.
pub struct Report<'a> {
    pub header: &'a Header,
    pub sections: &'a [Section],
    pub elapsed: Duration,
}

impl Report<'_> {
    fn quick(&self) -> bool {
        self.sections.iter().any(|s| s.quick)
    }
}

/// One piece of an experiment's tables.
#[derive(Debug, PartialEq)]
enum Block {
    Heading(String),
    /// Rows of cells, the first row the header.
    Table(Vec<Vec<String>>),
    /// Preformatted lines.
    Text(Vec<String>),
}

/// Splits `tables` into headings, Markdown tables and text.
fn blocks(tables: &str) -> Vec<Block> {
    let mut blocks: Vec<Block> = Vec::new();
    for line in tables.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('|') {
            let cells: Vec<String> = trimmed
                .trim_matches('|')
                .split('|')
                .map(|cell| cell.trim().to_string())
                .collect();
            let separator = cells
                .iter()
                .all(|c| !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':')));
            match blocks.last_mut() {
                Some(Block::Table(_)) if separator => {}
                Some(Block::Table(rows)) => rows.push(cells),
                _ => blocks.push(Block::Table(vec![cells])),
            }
        } else if let Some(heading) = trimmed.strip_prefix('#') {
            blocks.push(Block::Heading(
                heading.trim_start_matches('#').trim().to_string(),
            ));
        } else if trimmed.is_empty() {
            // A blank line ends text; the next text starts a new block.
            if let Some(Block::Text(lines)) = blocks.last()
                && !lines.is_empty()
            {
                blocks.push(Block::Text(Vec::new()));
            }
        } else {
            match blocks.last_mut() {
                Some(Block::Text(lines)) => lines.push(line.to_string()),
                _ => blocks.push(Block::Text(vec![line.to_string()])),
            }
        }
    }
    blocks.retain(|b| !matches!(b, Block::Text(lines) if lines.is_empty()));
    blocks
}

/// `text` with `&`, `<`, `>` and `"` escaped for HTML.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

/// Inline Markdown code (`x`) as HTML `<code>`, the rest escaped.
fn inline(text: &str) -> String {
    let mut out = String::new();
    for (i, part) in text.split('`').enumerate() {
        if i % 2 == 1 {
            let _ = write!(out, "<code>{}</code>", escape(part));
        } else {
            out.push_str(&escape(part));
        }
    }
    out
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;\
padding:0 1em;color:#222;line-height:1.45}\
h1{margin-bottom:.2em}h2{border-bottom:2px solid #0072B2;padding-bottom:.2em;margin-top:2.5em}\
.banner{background:#fff3cd;border:2px solid #D55E00;padding:.8em 1em;font-weight:bold}\
table{border-collapse:collapse;margin:.8em 0;font-size:.9em}\
td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}\
th{background:#f0f4f8}table.machine th{width:9em}\
pre{background:#f7f7f7;padding:.6em;overflow-x:auto;font-size:.85em}\
.paper{background:#eef6fb;border-left:4px solid #0072B2;padding:.4em 1em;margin:1em 0}\
.failures{background:#fdecea;border-left:4px solid #D55E00;padding:.4em 1em}\
figure{margin:1.5em 0}figure img{max-width:100%;border:1px solid #ddd}\
figcaption{font-size:.9em;color:#555}.better{font-style:italic}";

/// Shows which images did not load, on the page and on the console (the
/// headless check reads both).
const IMAGE_CHECK: &str = "window.addEventListener('load',function(){\
var broken=[];for(var i=0;i<document.images.length;i++){var img=document.images[i];\
if(!img.complete||img.naturalWidth===0){broken.push(img.getAttribute('src'));}}\
document.body.setAttribute('data-images',broken.length?'broken':'loaded');\
if(broken.length){console.error('images that did not load: '+broken.join(', '));\
var p=document.createElement('p');p.className='failures';\
p.textContent='Images that did not load: '+broken.join(', ');\
document.body.insertBefore(p,document.body.firstChild);}});";

/// The page.
pub fn html(report: &Report) -> String {
    let header = report.header;
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>bwos-bench report, {date}</title>\n<style>{STYLE}</style>\n\
         <script>{IMAGE_CHECK}</script>\n</head>\n<body>\n<h1>bwos-bench report</h1>\n",
        date = escape(&header.date)
    );
    if report.quick() {
        let _ = writeln!(out, "<p class=\"banner\">{}</p>", escape(QUICK_BANNER));
    }
    let _ = writeln!(out, "<table class=\"machine\">");
    let build = if header.optimized {
        "release (optimized)"
    } else {
        "DEBUG: run with --release for meaningful numbers"
    };
    for (key, value) in [
        (
            "machine",
            format!(
                "{} ({} cores, {})",
                header.cpu_model, header.cores, header.os
            ),
        ),
        (
            "revision",
            match header.checkout_note() {
                Some(checkout) => format!("{}; checkout {checkout}", header.git_revision),
                None => header.git_revision.clone(),
            },
        ),
        ("date", header.date.clone()),
        ("command", header.command_line.clone()),
        ("build", build.to_string()),
        ("run time", minutes(report.elapsed)),
    ] {
        let _ = writeln!(out, "<tr><th>{key}</th><td>{}</td></tr>", escape(&value));
    }
    let _ = writeln!(out, "</table>\n<p>Experiments:</p>\n<ol>");
    for section in report.sections {
        let _ = writeln!(
            out,
            "<li><a href=\"#{0}\">{0}</a>{1}</li>",
            section.name,
            if section.failures.is_empty() {
                ""
            } else {
                " (FAILED)"
            }
        );
    }
    let _ = writeln!(out, "</ol>");
    for section in report.sections {
        html_section(&mut out, section);
    }
    let _ = writeln!(out, "</body>\n</html>");
    out
}

fn html_section(out: &mut String, section: &Section) {
    let about = section.about;
    let _ = write!(
        out,
        "<section class=\"experiment\" id=\"{name}\">\n<h2>{name}</h2>\n\
         <p class=\"measures\">{measures}</p>\n<p class=\"better\">{better}</p>\n",
        name = section.name,
        measures = inline(about.measures),
        better = inline(about.better),
    );
    if let Some(paper) = &about.paper {
        let _ = write!(
            out,
            "<div class=\"paper\">\n<p><strong>{figure}</strong>: {claim}</p>\n\
             <p>Measured on {machine}, {threads}.</p>\n<p><strong>This machine</strong>: {result}</p>\n\
             <p><strong>Why they may differ</strong>: {differs}</p>\n</div>\n",
            figure = escape(paper.figure),
            claim = inline(paper.claim),
            machine = escape(paper.machine),
            threads = escape(paper.threads),
            result = section.result.as_deref().map_or(
                "no result (the run did not get that far)".to_string(),
                inline
            ),
            differs = inline(paper.differs),
        );
    }
    if !section.failures.is_empty() {
        let _ = writeln!(out, "<div class=\"failures\"><p>Failures:</p><ul>");
        for failure in &section.failures {
            let _ = writeln!(out, "<li><pre>{}</pre></li>", escape(failure));
        }
        let _ = writeln!(out, "</ul></div>");
    }
    let _ = writeln!(out, "<div class=\"tables\">");
    for block in blocks(&section.tables) {
        match block {
            Block::Heading(text) => {
                let _ = writeln!(out, "<h3>{}</h3>", inline(&text));
            }
            Block::Text(lines) => {
                let _ = writeln!(out, "<pre>{}</pre>", escape(&lines.join("\n")));
            }
            Block::Table(rows) => {
                let _ = writeln!(out, "<table>");
                for (i, row) in rows.iter().enumerate() {
                    let cell = if i == 0 { "th" } else { "td" };
                    out.push_str("<tr>");
                    for value in row {
                        let _ = write!(out, "<{cell}>{}</{cell}>", inline(value));
                    }
                    out.push_str("</tr>\n");
                }
                let _ = writeln!(out, "</table>");
            }
        }
    }
    let _ = writeln!(out, "</div>");
    for (file, title) in &section.plots {
        let _ = writeln!(
            out,
            "<figure><img src=\"{file}\" alt=\"{title}\"><figcaption>{file}</figcaption></figure>",
            file = escape(file),
            title = escape(title),
        );
    }
    if let Some(json) = &section.json {
        let _ = writeln!(
            out,
            "<p>Every sample: <code>{}</code></p>",
            escape(&json.display().to_string())
        );
    }
    let _ = writeln!(out, "<p>Took {}.</p>\n</section>", minutes(section.elapsed));
}

/// The tables in Markdown, with the same header.
pub fn markdown(report: &Report) -> String {
    let header = report.header;
    let mut out = String::from("# bwos-bench report\n\n");
    if report.quick() {
        let _ = writeln!(out, "**{QUICK_BANNER}**\n");
    }
    let _ = writeln!(
        out,
        "- machine: {} ({} cores, {})\n- revision: `{}`\n- date: {}\n- command: `{}`\n- run time: {}\n",
        header.cpu_model,
        header.cores,
        header.os,
        header.git_revision,
        header.date,
        header.command_line,
        minutes(report.elapsed)
    );
    for section in report.sections {
        let about = section.about;
        let _ = writeln!(
            out,
            "## {}\n\n{}\n\n*{}*\n",
            section.name, about.measures, about.better
        );
        if let Some(paper) = &about.paper {
            let _ = writeln!(
                out,
                "> **{}**: {} Measured on {}, {}.\n>\n> **This machine**: {}\n>\n> **Why they may differ**: {}\n",
                paper.figure,
                paper.claim,
                paper.machine,
                paper.threads,
                section.result.as_deref().unwrap_or("no result"),
                paper.differs
            );
        }
        for failure in &section.failures {
            let _ = writeln!(out, "**FAILED**: {failure}\n");
        }
        for block in blocks(&section.tables) {
            match block {
                Block::Heading(text) => {
                    let _ = writeln!(out, "### {text}\n");
                }
                Block::Text(lines) => {
                    let _ = writeln!(out, "```text\n{}\n```\n", lines.join("\n"));
                }
                Block::Table(rows) => {
                    for (i, row) in rows.iter().enumerate() {
                        let _ = writeln!(out, "| {} |", row.join(" | "));
                        if i == 0 {
                            let _ = writeln!(out, "|{}", "---|".repeat(row.len()));
                        }
                    }
                    out.push('\n');
                }
            }
        }
        for (file, title) in &section.plots {
            let _ = writeln!(out, "- plot: [{title}]({file})");
        }
        if !section.plots.is_empty() {
            out.push('\n');
        }
    }
    out
}

/// Writes `index.html` and `report.md` into `dir`; returns their paths.
pub fn write(report: &Report, dir: &Path) -> io::Result<Vec<PathBuf>> {
    fs::create_dir_all(dir).map_err(|e| annotate(e, dir))?;
    let html_path = dir.join("index.html");
    let markdown_path = dir.join("report.md");
    fs::write(&html_path, html(report)).map_err(|e| annotate(e, &html_path))?;
    fs::write(&markdown_path, markdown(report)).map_err(|e| annotate(e, &markdown_path))?;
    Ok(vec![html_path, markdown_path])
}

/// Reads `dir/index.html` back: every image it shows must exist in `dir`,
/// every section of `sections` must be there with its tables (an HTML
/// table or preformatted text) and every plot it wrote. Returns what is
/// wrong.
pub fn check(dir: &Path, sections: &[Section]) -> Result<(), Vec<String>> {
    let page = match fs::read_to_string(dir.join("index.html")) {
        Ok(page) => page,
        Err(error) => return Err(vec![format!("index.html: {error}")]),
    };
    let mut problems = Vec::new();
    for source in page.split("<img src=\"").skip(1) {
        let file = source.split('"').next().unwrap_or_default();
        if !dir.join(file).is_file() {
            problems.push(format!("the page shows {file}, which does not exist"));
        }
    }
    for section in sections {
        let start = format!("<section class=\"experiment\" id=\"{}\">", section.name);
        let Some(body) = page
            .split(&start)
            .nth(1)
            .and_then(|rest| rest.split("</section>").next())
        else {
            problems.push(format!("no section for {}", section.name));
            continue;
        };
        let tables = body
            .split("<div class=\"tables\">")
            .nth(1)
            .and_then(|rest| rest.split("</div>").next())
            .unwrap_or_default();
        if section.failures.is_empty() && !tables.contains("<table") && !tables.contains("<pre") {
            problems.push(format!("{} has no table", section.name));
        }
        for (file, _) in &section.plots {
            if !body.contains(&format!("<img src=\"{file}\"")) {
                problems.push(format!("{} does not show {file}", section.name));
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::About;
    use crate::plot::{BarSeries, Better, Chart, Figure};

    const ABOUT: About = About {
        measures: "What `x` measures.",
        better: "Higher is better.",
        paper: None,
    };

    #[test]
    fn tables_text_and_headings_are_told_apart() {
        let text =
            "\n## Title\nnote line\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n  col   col\n  1     2\n";
        assert_eq!(
            blocks(text),
            vec![
                Block::Heading("Title".into()),
                Block::Text(vec!["note line".into()]),
                Block::Table(vec![
                    vec!["a".into(), "b".into()],
                    vec!["1".into(), "2".into()]
                ]),
                Block::Text(vec!["  col   col".into(), "  1     2".into()]),
            ]
        );
    }

    fn section(name: &'static str, tables: &str, plots: Vec<(String, String)>) -> Section {
        Section {
            name,
            about: &ABOUT,
            quick: true,
            tables: tables.into(),
            plots,
            result: None,
            json: None,
            failures: Vec::new(),
            elapsed: Duration::from_secs(3),
        }
    }

    /// The page of a report whose experiments are those of the real
    /// `report`, each with a table and a plot drawn by the real plotting
    /// code: every section is there, every image exists, the banner of a
    /// quick run shows. The checker catches a missing plot file and a
    /// section without its table (mutation: `check` that never looks at
    /// the images, or at the tables, fails the second half).
    #[test]
    fn the_page_has_every_experiment_its_tables_and_plots() {
        let dir = std::env::temp_dir().join(format!("bwos-bench-page-{}", std::process::id()));
        let settings = crate::report::Settings {
            quick: true,
            repetitions: None,
            dir: dir.clone(),
            json: dir.join("queue.json"),
            full: false,
            queue: crate::queue::QueueArgs {
                millis: 1,
                threads: 2,
                only: Vec::new(),
            },
        };
        let names: Vec<&'static str> = crate::experiments(&settings)
            .iter()
            .map(|e| e.name())
            .collect();
        assert!(names.len() >= 8, "{names:?}");
        let mut sections = Vec::new();
        for name in &names {
            let figure = Figure {
                file: format!("{name}.svg"),
                title: format!("{name} plot"),
                better: Better::Higher,
                note: String::new(),
                chart: Chart::Bars {
                    value_label: "speed (x)".into(),
                    categories: vec!["a".into()],
                    series: vec![BarSeries::new("bwos", vec![Some(1.0)])],
                    reference: None,
                },
            };
            crate::plot::draw(&figure, &{
                fs::create_dir_all(&dir).unwrap();
                dir.clone()
            })
            .unwrap();
            sections.push(section(
                name,
                "| runtime | time |\n|---|---|\n| bwos | 1 |\n",
                vec![(figure.file.clone(), figure.title.clone())],
            ));
        }
        let header = Header::collect();
        fn report<'a>(header: &'a Header, sections: &'a [Section]) -> Report<'a> {
            Report {
                header,
                sections,
                elapsed: Duration::from_secs(60),
            }
        }
        write(&report(&header, &sections), &dir).unwrap();
        let checked = check(&dir, &sections);
        let page = fs::read_to_string(dir.join("index.html")).unwrap();
        let markdown = fs::read_to_string(dir.join("report.md")).unwrap();
        // A plot that is gone and a section whose tables are empty.
        fs::remove_file(dir.join("queue.svg")).unwrap();
        sections[1].tables = String::new();
        write(&report(&header, &sections), &dir).unwrap();
        let broken = check(&dir, &sections);
        fs::remove_dir_all(&dir).unwrap();
        assert_eq!(checked, Ok(()));
        assert!(page.contains(QUICK_BANNER) && markdown.contains(QUICK_BANNER));
        assert!(markdown.contains("| bwos | 1 |"), "{markdown}");
        let problems = broken.unwrap_err();
        assert!(
            problems.iter().any(|p| p.contains("queue.svg")),
            "{problems:?}"
        );
        assert!(
            problems
                .iter()
                .any(|p| p.contains(&format!("{} has no table", names[1]))),
            "{problems:?}"
        );
    }
}
