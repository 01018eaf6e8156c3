//! Prompts, rendered from Jinja templates kept as files (`prompts/*.j2` in this crate, built in;
//! a directory of the user's may replace any of them): `system.j2` and `propose.j2` open a
//! conversation, `repair.j2` answers a reply that could not be used or did not compile.

use std::path::Path;

use serde::Serialize;

use crate::Message;

/// The templates a prompt directory may hold.
pub const TEMPLATES: &[(&str, &str)] = &[
    ("system.j2", include_str!("../prompts/system.j2")),
    ("propose.j2", include_str!("../prompts/propose.j2")),
    ("repair.j2", include_str!("../prompts/repair.j2")),
];

#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    #[error("cannot read prompt template {path}: {message}")]
    Read { path: String, message: String },
    #[error("prompt template {name}: {source}")]
    Template { name: String, source: minijinja::Error },
}

/// What stays the same over a search: the kernel's spec and ABI, and the machine.
#[derive(Debug, Clone, Serialize)]
pub struct Task {
    pub kernel: String,
    /// The spec file's text.
    pub spec: String,
    /// The C prototype every candidate must define.
    pub signature: String,
    /// Each buffer: `x: f32[64, 4096] (input)`.
    pub buffers: Vec<String>,
    pub flops: f64,
    pub bytes: f64,
    /// The flags every candidate is compiled with before its own.
    pub base_flags: String,
    pub machine: MachineFacts,
    /// The roofline floor's time, written out (`12.3 µs`).
    pub floor: String,
    pub memory_bound: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct MachineFacts {
    pub cpu: String,
    pub isa: String,
    pub threads: usize,
    pub last_level_cache_bytes: u64,
    /// Per thread count: (threads, peak GFLOP/s, GB/s).
    pub ceilings: Vec<(usize, f64, f64)>,
}

/// A kernel shown to the model with its measured time.
#[derive(Debug, Clone, Serialize)]
pub struct Shown {
    pub source: String,
    pub flags: String,
    /// Its median time, written out (`12.3 µs`).
    pub time: String,
    /// Fraction of the roofline floor reached, in percent.
    pub roofline_percent: f64,
    pub speedup: f64,
    pub proposer: String,
}

/// A verifier's rejection of a recent candidate.
#[derive(Debug, Clone, Serialize)]
pub struct Rejected {
    pub reason: String,
    pub detail: String,
    pub proposer: String,
    /// The rejected source, where it is worth showing (the model's own).
    pub source: Option<String>,
}

/// Everything one new conversation is told.
#[derive(Debug, Clone, Serialize)]
pub struct Shot<'a> {
    pub task: &'a Task,
    pub incumbent: Shown,
    pub others: Vec<Shown>,
    pub rejections: Vec<Rejected>,
}

#[derive(Clone)]
pub struct Prompts {
    env: minijinja::Environment<'static>,
}

impl Prompts {
    /// The built-in templates, each replaced by the file of the same name in `dir` if it has one.
    pub fn load(dir: Option<&Path>) -> Result<Prompts, PromptError> {
        let mut env = minijinja::Environment::new();
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        env.set_syntax(minijinja::syntax::SyntaxConfig::builder().trim_blocks(true).lstrip_blocks(true).build().expect("the default delimiters"));
        for (name, builtin) in TEMPLATES {
            let text = match dir.map(|d| d.join(name)).filter(|p| p.exists()) {
                Some(path) => std::fs::read_to_string(&path).map_err(|e| PromptError::Read { path: path.display().to_string(), message: e.to_string() })?,
                None => builtin.to_string(),
            };
            env.add_template_owned(name.to_string(), text).map_err(|source| PromptError::Template { name: name.to_string(), source })?;
        }
        Ok(Prompts { env })
    }

    fn render(&self, name: &str, context: impl Serialize) -> Result<String, PromptError> {
        let template = self.env.get_template(name).map_err(|source| PromptError::Template { name: name.to_string(), source })?;
        template.render(minijinja::value::Serde(context)).map_err(|source| PromptError::Template { name: name.to_string(), source })
    }

    /// The opening of a new conversation: the system message and the request.
    pub fn open(&self, shot: &Shot) -> Result<Vec<Message>, PromptError> {
        Ok(vec![Message::system(self.render("system.j2", shot)?), Message::user(self.render("propose.j2", shot)?)])
    }

    /// The answer to a reply that could not be used: its problem's kind and what went wrong.
    pub fn repair(&self, task: &Task, problem: &str, detail: &str) -> Result<Message, PromptError> {
        #[derive(Serialize)]
        struct Repair<'a> {
            task: &'a Task,
            problem: &'a str,
            detail: &'a str,
        }
        Ok(Message::user(self.render("repair.j2", Repair { task, problem, detail })?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task() -> Task {
        Task {
            kernel: "k".into(),
            spec: "def k(x): ...".into(),
            signature: "void k(const float *restrict x, float *restrict out);".into(),
            buffers: vec!["x: f32[4] (input)".into(), "out: f32[4] (output)".into()],
            flops: 4.0,
            bytes: 32.0,
            base_flags: "-O3 -march=native".into(),
            machine: MachineFacts { cpu: "cpu".into(), isa: "avx2".into(), threads: 2, last_level_cache_bytes: 1 << 20, ceilings: vec![(1, 100.0, 25.0)] },
            floor: "1 ns".into(),
            memory_bound: true,
        }
    }

    fn shown(source: &str) -> Shown {
        Shown { source: source.into(), flags: "-O3".into(), time: "2 ns".into(), roofline_percent: 50.0, speedup: 1.5, proposer: "naive".into() }
    }

    #[test]
    fn the_built_in_templates_render_everything_they_are_given() {
        let task = task();
        let rejected = Rejected { reason: "inaccurate".into(), detail: "element 3 is off".into(), proposer: "llm".into(), source: Some("void k(...) { bad }".into()) };
        let shot = Shot { task: &task, incumbent: shown("void k(...) { best }"), others: vec![shown("void k(...) { other }")], rejections: vec![rejected] };
        let messages = Prompts::load(None).unwrap().open(&shot).unwrap();
        assert_eq!(messages.iter().map(|m| m.role.as_str()).collect::<Vec<_>>(), ["system", "user"]);
        assert!(messages[0].content.contains("void k(const float *restrict x, float *restrict out);") && messages[0].content.contains("avx2"));
        for needle in ["def k(x): ...", "x: f32[4] (input)", "{ best }", "{ other }", "inaccurate: element 3 is off", "{ bad }", "1 ns (memory-bound)", "50.0% of the roofline"] {
            assert!(messages[1].content.contains(needle), "{needle:?} missing from:\n{}", messages[1].content);
        }
        let repair = Prompts::load(None).unwrap().repair(&task, "compile-error", "k.c:3: error: expected ';'\n").unwrap();
        assert!(repair.content.contains("did not compile") && repair.content.contains("expected ';'"));
    }

    #[test]
    fn a_template_in_the_directory_replaces_the_built_in_one() {
        let dir = std::env::temp_dir().join(format!("ollie-prompts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("system.j2"), "You tune {{ task.kernel }}.").unwrap();
        let task = task();
        let shot = Shot { task: &task, incumbent: shown("s"), others: Vec::new(), rejections: Vec::new() };
        let messages = Prompts::load(Some(&dir)).unwrap().open(&shot).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(messages[0].content, "You tune k.");
        assert!(messages[1].content.contains("Write a faster kernel for `k`"), "the others stay built in");
    }
}
