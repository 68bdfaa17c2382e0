//! Prometheus text exposition format 0.0.4 primitives: family headers, samples, label-value and
//! help-text escaping, metric-name validation.
//!
//! Owns only formatting; must not read counters (the caller in `metrics.rs` passes plain numbers)
//! and must not decide which families exist. Runs on scrape, never on the request path.
//!
//! Format reference: <https://prometheus.io/docs/instrumenting/exposition_formats/>.

use std::fmt::Write as _;

/// The `# TYPE` of a family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Counter,
    Gauge,
    Histogram,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// Appends text exposition to a `String`. Writing into a `String` cannot fail, so the
/// `fmt::Result`s are discarded in one place here.
pub(crate) struct Writer<'a> {
    out: &'a mut String,
}

impl<'a> Writer<'a> {
    pub(crate) fn new(out: &'a mut String) -> Self {
        Self { out }
    }

    /// `# HELP` and `# TYPE` lines.
    pub(crate) fn family(&mut self, name: &str, help: &str, kind: Kind) {
        self.out.push_str("# HELP ");
        self.out.push_str(name);
        self.out.push(' ');
        escape_help(self.out, help);
        self.out.push_str("\n# TYPE ");
        self.out.push_str(name);
        self.out.push(' ');
        self.out.push_str(kind.as_str());
        self.out.push('\n');
    }

    /// One sample line: `name{k="v",…} value`. `suffix` is appended to the name (`_bucket`,
    /// `_sum`, `_count` or empty); label values are escaped.
    pub(crate) fn sample(
        &mut self,
        name: &str,
        suffix: &str,
        labels: &[(&str, &str)],
        value: Value,
    ) {
        self.out.push_str(name);
        self.out.push_str(suffix);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (key, label_value)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                self.out.push_str(key);
                self.out.push_str("=\"");
                escape_label_value(self.out, label_value);
                self.out.push('"');
            }
            self.out.push('}');
        }
        self.out.push(' ');
        // Writing to a String never fails.
        let _ = match value {
            Value::Unsigned(n) => write!(self.out, "{n}"),
            Value::Signed(n) => write!(self.out, "{n}"),
            Value::Float(x) => write_float(self.out, x),
        };
        self.out.push('\n');
    }
}

/// A sample value.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Value {
    Unsigned(u64),
    Signed(i64),
    Float(f64),
}

/// Floats as Prometheus reads them: Rust's shortest round-trip decimal (never exponent
/// notation), and `NaN`, `+Inf`, `-Inf` spelled the Go way.
fn write_float(out: &mut String, x: f64) -> std::fmt::Result {
    if x.is_nan() {
        out.push_str("NaN");
        Ok(())
    } else if x.is_infinite() {
        out.push_str(if x > 0.0 { "+Inf" } else { "-Inf" });
        Ok(())
    } else {
        write!(out, "{x}")
    }
}

/// Label values: "`\` (backslash), `"` (double-quote) and line feed must be escaped as `\\`,
/// `\"` and `\n`, respectively."
pub(crate) fn escape_label_value(out: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// HELP text: "`\` (backslash) and line feed characters have to be escaped as `\\` and `\n`,
/// respectively."
pub(crate) fn escape_help(out: &mut String, help: &str) {
    for c in help.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// Metric names "must match the regex `[a-zA-Z_:][a-zA-Z0-9_:]*`".
pub(crate) fn is_valid_metric_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    let first_ok = bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_' || b == b':');
    first_ok && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn escaped_label(value: &str) -> String {
        let mut out = String::new();
        escape_label_value(&mut out, value);
        out
    }

    #[test]
    fn label_values_escape_backslash_quote_and_newline_only() {
        let check = |input: &str, expected: &str| assert_eq!(escaped_label(input), expected);
        check("plain", "plain");
        check(r"a\b", r"a\\b");
        check(r#"a"b"#, r#"a\"b"#);
        check("a\nb", r"a\nb");
        check("tab\there", "tab\there");
        check("ünïcode,=}{", "ünïcode,=}{");
        check(r#"\"\n"#, r#"\\\"\\n"#);
    }

    #[test]
    fn help_escapes_backslash_and_newline_but_not_quotes() {
        let mut out = String::new();
        escape_help(&mut out, "say \"hi\"\\\nbye");
        assert_eq!(out, r#"say "hi"\\\nbye"#);
    }

    #[test]
    fn samples_and_headers_have_the_text_format_shape() {
        let mut out = String::new();
        let mut writer = Writer::new(&mut out);
        writer.family("x_total", "Things.", Kind::Counter);
        writer.sample("x_total", "", &[], Value::Unsigned(3));
        writer.sample(
            "x_total",
            "",
            &[("a", "1"), ("b", "q\"")],
            Value::Unsigned(u64::MAX),
        );
        writer.sample("y", "_sum", &[], Value::Float(0.25));
        writer.sample("y", "_sum", &[], Value::Float(f64::INFINITY));
        writer.sample("g", "", &[], Value::Signed(-1));
        assert_eq!(
            out,
            "# HELP x_total Things.\n# TYPE x_total counter\nx_total 3\n\
             x_total{a=\"1\",b=\"q\\\"\"} 18446744073709551615\ny_sum 0.25\ny_sum +Inf\ng -1\n"
        );
    }

    #[test]
    fn floats_never_use_exponent_notation() {
        let mut out = String::new();
        let _ = write_float(&mut out, 1e-9);
        assert_eq!(out, "0.000000001");
    }

    #[test]
    fn metric_names_follow_the_prometheus_grammar() {
        for name in ["a", "_a", ":a", "sluice_audit_dropped_total", "a:b_9"] {
            assert!(is_valid_metric_name(name), "{name}");
        }
        for name in ["", "9a", "a-b", "a b", "a{b}", "é"] {
            assert!(!is_valid_metric_name(name), "{name}");
        }
    }
}
