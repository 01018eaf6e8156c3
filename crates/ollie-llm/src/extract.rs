//! The kernel in a reply: its fenced C block that defines the kernel's symbol, and the optional
//! `flags:` line. A reply that offers no such block, or two different ones, is `Unusable`.

/// The kernel a reply offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extracted {
    pub source: String,
    /// Extra compile flags from the reply's `flags:` line (none if it has none).
    pub flags: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unusable {
    #[error("the reply has no fenced C code block")]
    NoCode,
    #[error("the reply has {count} different C blocks that each define `{symbol}`; it must offer exactly one kernel")]
    Conflicting { symbol: String, count: usize },
    #[error("no C block defines the kernel `void {symbol}(...)` with its {params} parameters; {found}")]
    WrongSymbol { symbol: String, params: usize, found: String },
}

impl Unusable {
    /// The short kind a store records.
    pub fn kind(&self) -> &'static str {
        match self {
            Unusable::NoCode => "no-code",
            Unusable::Conflicting { .. } => "conflicting-blocks",
            Unusable::WrongSymbol { .. } => "wrong-symbol",
        }
    }
}

/// A fenced block: its info string (language) and text.
struct Block {
    info: String,
    text: String,
}

/// Fenced blocks (``` or ~~~, as CommonMark has them) and the lines outside them. A block left
/// open runs to the end of the reply (a reply cut off by its token limit).
fn blocks(reply: &str) -> (Vec<Block>, Vec<&str>) {
    let (mut blocks, mut outside) = (Vec::new(), Vec::new());
    let mut open: Option<(String, usize, Block)> = None;
    for line in reply.lines() {
        let trimmed = line.trim_start();
        let fence = |c: char| trimmed.chars().take_while(|&x| x == c).count();
        match &mut open {
            Some((marker, len, block)) => {
                let n = fence(marker.chars().next().expect("a fence marker"));
                if n >= *len && trimmed[n..].trim().is_empty() {
                    let (_, _, block) = open.take().expect("open");
                    blocks.push(block);
                } else {
                    block.text.push_str(line);
                    block.text.push('\n');
                }
            }
            None => {
                let (ticks, tildes) = (fence('`'), fence('~'));
                if ticks >= 3 || tildes >= 3 {
                    let (c, n) = if ticks >= 3 { ('`', ticks) } else { ('~', tildes) };
                    let info = trimmed[n..].split_whitespace().next().unwrap_or("").to_ascii_lowercase();
                    open = Some((c.to_string(), n, Block { info, text: String::new() }));
                } else {
                    outside.push(line);
                }
            }
        }
    }
    blocks.extend(open.map(|(_, _, b)| b));
    (blocks, outside)
}

const CODE: &[&str] = &["", "c", "c99", "c11", "c17", "c23", "h", "cpp", "c++", "cc"];

/// Finds the kernel `symbol` (a `void` function of `params` parameters) in `reply`.
pub fn extract(reply: &str, symbol: &str, params: usize) -> Result<Extracted, Unusable> {
    let (blocks, outside) = blocks(reply);
    // A `flags:` line, else a fenced block tagged `flags`.
    let flags = outside
        .iter()
        .find_map(|l| flags_line(l))
        .or_else(|| blocks.iter().find(|b| b.info == "flags").map(|b| b.text.split_whitespace().map(|w| w.trim_matches('`').to_string()).collect()));
    let code: Vec<&Block> = blocks.iter().filter(|b| CODE.contains(&b.info.as_str()) && !b.text.trim().is_empty()).collect();
    if code.is_empty() {
        return Err(Unusable::NoCode);
    }
    let mut defining: Vec<&str> = Vec::new();
    let mut found = Vec::new();
    for b in &code {
        let functions = definitions(&b.text);
        if functions.iter().any(|f| f.name == symbol && f.void && f.params == params) {
            if !defining.iter().any(|d| d.trim() == b.text.trim()) {
                defining.push(&b.text);
            }
        } else {
            found.extend(functions);
        }
    }
    match defining.len() {
        1 => Ok(Extracted { source: defining[0].to_string(), flags: flags.unwrap_or_default() }),
        0 => {
            let found = if found.is_empty() {
                "the code defines no function".to_string()
            } else {
                let names: Vec<String> = found.iter().map(|f| format!("`{}{}` ({} parameters)", if f.void { "void " } else { "" }, f.name, f.params)).collect();
                format!("it defines {}", names.join(", "))
            };
            Err(Unusable::WrongSymbol { symbol: symbol.to_string(), params, found })
        }
        count => Err(Unusable::Conflicting { symbol: symbol.to_string(), count }),
    }
}

/// `flags: -O3 -fopenmp` (with any Markdown emphasis or backticks around it).
fn flags_line(line: &str) -> Option<Vec<String>> {
    let l = line.trim().trim_start_matches(['*', '_', '`', '#', '-', ' ']);
    let (head, rest) = l.split_once(':')?;
    if !head.trim_matches(['*', '_', '`', ' ']).eq_ignore_ascii_case("flags") {
        return None;
    }
    Some(rest.split_whitespace().map(|w| w.trim_matches(['`', '*', '_']).to_string()).filter(|w| !w.is_empty()).collect())
}

/// A function definition at file scope.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Definition {
    name: String,
    void: bool,
    params: usize,
}

/// The function definitions in C source: `name(...)` at brace depth 0 followed by `{`, with
/// comments, strings and preprocessor lines ignored.
fn definitions(source: &str) -> Vec<Definition> {
    let code = strip(source);
    let b = code.as_bytes();
    let mut out = Vec::new();
    let (mut depth, mut i, mut statement_start) = (0usize, 0usize, 0usize);
    while i < b.len() {
        match b[i] {
            b'{' => depth += 1,
            b'}' => {
                depth = depth.saturating_sub(1);
                statement_start = i + 1;
            }
            b';' if depth == 0 => statement_start = i + 1,
            b'(' if depth == 0 => {
                let before = &code[statement_start..i];
                let name: String = before.trim_end().chars().rev().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect::<Vec<_>>().into_iter().rev().collect();
                // The matching parenthesis, then a body.
                let (mut level, mut j) = (0usize, i);
                while j < b.len() {
                    match b[j] {
                        b'(' => level += 1,
                        b')' => {
                            level -= 1;
                            if level == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    j += 1;
                }
                let after = code.get(j + 1..).unwrap_or("").trim_start();
                if !name.is_empty() && after.starts_with('{') {
                    let kind = before.trim_end()[..before.trim_end().len() - name.len()].trim();
                    let void = kind.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).any(|w| w == "void") && !kind.ends_with('*');
                    out.push(Definition { name, void, params: count_params(&code[i + 1..j.min(b.len())]) });
                }
                i = j;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

fn count_params(list: &str) -> usize {
    let list = list.trim();
    if list.is_empty() || list == "void" {
        return 0;
    }
    let mut level = 0i32;
    1 + list
        .chars()
        .filter(|&c| {
            match c {
                '(' | '[' => level += 1,
                ')' | ']' => level -= 1,
                _ => {}
            }
            c == ',' && level == 0
        })
        .count()
}

/// The source with comments, string and character literals blanked and preprocessor lines
/// dropped, so that only code is scanned.
fn strip(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut chars = source.chars().peekable();
    let mut line_start = true;
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
                line_start = true;
                continue;
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
                out.push(' ');
            }
            '"' | '\'' => {
                let mut escaped = false;
                for d in chars.by_ref() {
                    if !escaped && d == c {
                        break;
                    }
                    escaped = !escaped && d == '\\';
                }
                out.push('0');
            }
            '#' if line_start => {
                // A directive, with its continuation lines.
                let mut last = ' ';
                for c in chars.by_ref() {
                    if c == '\n' && last != '\\' {
                        out.push('\n');
                        break;
                    }
                    if !c.is_whitespace() || c == '\n' {
                        last = c;
                    }
                }
                line_start = true;
                continue;
            }
            c => out.push(c),
        }
        line_start = c == '\n' || (line_start && c.is_whitespace());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const KERNEL: &str = "#include <math.h>\n// softmax(x) here\nstatic float helper(float a, float b) { return a + b; }\nvoid softmax(const float *restrict x, float *restrict out) {\n  out[0] = helper(x[0], 1.0f);\n}\n";

    #[test]
    fn finds_the_block_that_defines_the_kernel_and_the_flags_line() {
        let reply = format!("Here is a faster one.\n\n```c\n{KERNEL}```\n\n**Flags:** `-O3 -fopenmp`\n\nIt uses a helper.");
        let e = extract(&reply, "softmax", 2).unwrap();
        assert_eq!(e.source, KERNEL);
        assert_eq!(e.flags, vec!["-O3", "-fopenmp"]);
        let block = format!("```c\n{KERNEL}```\n```flags\n-fopenmp -funroll-loops\n```\n");
        assert_eq!(extract(&block, "softmax", 2).unwrap().flags, vec!["-fopenmp", "-funroll-loops"]);
    }

    #[test]
    fn a_reply_without_code_or_with_two_kernels_is_unusable() {
        assert_eq!(extract("I cannot help with that.", "softmax", 2), Err(Unusable::NoCode));
        assert_eq!(extract("```python\nprint(1)\n```", "softmax", 2), Err(Unusable::NoCode));
        let other = KERNEL.replace("1.0f", "2.0f");
        let two = format!("```c\n{KERNEL}```\nor\n```c\n{other}```\n");
        assert_eq!(extract(&two, "softmax", 2).unwrap_err().kind(), "conflicting-blocks");
        let same = format!("```c\n{KERNEL}```\nagain:\n```c\n{KERNEL}```\n");
        assert!(extract(&same, "softmax", 2).is_ok(), "the same block twice is one kernel");
    }

    #[test]
    fn a_kernel_with_another_name_or_arity_is_the_wrong_symbol() {
        let renamed = format!("```c\n{}```", KERNEL.replace("void softmax(", "void softmax_fast("));
        let e = extract(&renamed, "softmax", 2).unwrap_err();
        assert_eq!(e.kind(), "wrong-symbol");
        assert!(e.to_string().contains("`void softmax_fast` (2 parameters)"), "{e}");
        let arity = format!("```c\n{KERNEL}```");
        assert_eq!(extract(&arity, "softmax", 3).unwrap_err().kind(), "wrong-symbol");
        let returns = format!("```c\n{}```", KERNEL.replace("void softmax(", "int softmax("));
        assert_eq!(extract(&returns, "softmax", 2).unwrap_err().kind(), "wrong-symbol");
        // Only a declaration, no body.
        assert_eq!(extract("```c\nvoid softmax(const float *x, float *out);\n```", "softmax", 2).unwrap_err().kind(), "wrong-symbol");
    }

    #[test]
    fn comments_strings_and_directives_do_not_fool_the_scan() {
        let tricky = "#define K(a) void softmax(a) {\n/* void softmax(int a, int b) { */\nconst char *s = \"void softmax(x, y) {\";\nvoid softmax(const float *x,\n             float *out)\n{\n  for (int i = 0; i < 4; i++) { out[i] = x[i]; }\n}\n";
        let e = extract(&format!("~~~\n{tricky}~~~"), "softmax", 2).unwrap();
        assert_eq!(e.source, tricky);
        assert_eq!(definitions(tricky), vec![Definition { name: "softmax".into(), void: true, params: 2 }]);
    }

    #[test]
    fn a_block_cut_off_by_the_token_limit_still_counts() {
        let e = extract("```c\nvoid softmax(const float *x, float *out) {\n  out[0] = x[0];\n", "softmax", 2).unwrap();
        assert!(e.source.contains("out[0] = x[0];"));
    }
}
