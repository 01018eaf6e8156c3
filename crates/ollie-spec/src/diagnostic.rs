//! Diagnostics as data (code, message, labelled spans, help), rendered separately with miette.

use std::fmt;

use miette::{GraphicalReportHandler, GraphicalTheme, LabeledSpan, NamedSource, SourceCode};
use ruff_text_size::TextRange;

/// A stable diagnostic code. The kebab-case name is what users see and search for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Code {
    SyntaxError,
    UnsupportedStatement,
    UnsupportedSyntax,
    UnsupportedCall,
    UnsupportedArgument,
    UnsupportedImport,
    UnsupportedDtype,
    UnsupportedIndex,
    UnsupportedEinsum,
    MissingNumpyImport,
    BadAnnotation,
    MissingAnnotation,
    UnknownDimension,
    UnknownName,
    UnknownKernel,
    NotAConstant,
    ShapeMismatch,
    AxisOutOfRange,
    IndexOutOfRange,
    BadReshape,
    BadValue,
    MissingReturn,
    ReturnMismatch,
    AssertionFailed,
    UnusedParameter,
    UnreachableCode,
    IndexResultUsed,
    Internal,
}

impl Code {
    pub fn name(self) -> &'static str {
        match self {
            Code::SyntaxError => "syntax-error",
            Code::UnsupportedStatement => "unsupported-statement",
            Code::UnsupportedSyntax => "unsupported-syntax",
            Code::UnsupportedCall => "unsupported-call",
            Code::UnsupportedArgument => "unsupported-argument",
            Code::UnsupportedImport => "unsupported-import",
            Code::UnsupportedDtype => "unsupported-dtype",
            Code::UnsupportedIndex => "unsupported-index",
            Code::UnsupportedEinsum => "unsupported-einsum",
            Code::MissingNumpyImport => "missing-numpy-import",
            Code::BadAnnotation => "bad-annotation",
            Code::MissingAnnotation => "missing-annotation",
            Code::UnknownDimension => "unknown-dimension",
            Code::UnknownName => "unknown-name",
            Code::UnknownKernel => "unknown-kernel",
            Code::NotAConstant => "not-a-constant",
            Code::ShapeMismatch => "shape-mismatch",
            Code::AxisOutOfRange => "axis-out-of-range",
            Code::IndexOutOfRange => "index-out-of-range",
            Code::BadReshape => "bad-reshape",
            Code::BadValue => "bad-value",
            Code::MissingReturn => "missing-return",
            Code::ReturnMismatch => "return-mismatch",
            Code::AssertionFailed => "assertion-failed",
            Code::UnusedParameter => "unused-parameter",
            Code::UnreachableCode => "unreachable-code",
            Code::IndexResultUsed => "index-result-used",
            Code::Internal => "internal",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Label {
    pub range: TextRange,
    pub message: String,
}

/// One finding about a spec. Errors stop the front end; warnings ride along with the result.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    pub code: Code,
    pub severity: Severity,
    pub message: String,
    pub labels: Vec<Label>,
    pub help: Option<String>,
}

impl Diagnostic {
    pub fn error(code: Code, message: impl Into<String>) -> Diagnostic {
        Diagnostic { code, severity: Severity::Error, message: message.into(), labels: Vec::new(), help: None }
    }

    pub fn warning(code: Code, message: impl Into<String>) -> Diagnostic {
        Diagnostic { severity: Severity::Warning, ..Diagnostic::error(code, message) }
    }

    pub fn label(mut self, range: TextRange, message: impl Into<String>) -> Diagnostic {
        self.labels.push(Label { range, message: message.into() });
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    /// Renders the diagnostic with the source lines and carets under its spans, without colour.
    pub fn render(&self, file_name: &str, source: &str) -> String {
        let report = Rendered { diagnostic: self, source: NamedSource::new(file_name, source.to_string()) };
        let mut out = String::new();
        GraphicalReportHandler::new_themed(GraphicalTheme::unicode_nocolor())
            .with_width(100)
            .with_links(false)
            .render_report(&mut out, &report)
            .expect("rendering to a String does not fail");
        out
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(f, "{kind}[{}]: {}", self.code.name(), self.message)
    }
}

impl std::error::Error for Diagnostic {}

struct Rendered<'a> {
    diagnostic: &'a Diagnostic,
    source: NamedSource<String>,
}

impl fmt::Debug for Rendered<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.diagnostic, f)
    }
}

impl fmt::Display for Rendered<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.diagnostic.message)
    }
}

impl std::error::Error for Rendered<'_> {}

impl miette::Diagnostic for Rendered<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        Some(Box::new(self.diagnostic.code.name()))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.diagnostic.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
        })
    }

    fn help<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.diagnostic.help.as_ref().map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        if self.diagnostic.labels.is_empty() {
            None
        } else {
            Some(&self.source)
        }
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        if self.diagnostic.labels.is_empty() {
            return None;
        }
        Some(Box::new(self.diagnostic.labels.iter().map(|l| {
            let start = usize::from(l.range.start());
            let len = usize::from(l.range.len());
            LabeledSpan::new(Some(l.message.clone()), start, len)
        })))
    }
}
