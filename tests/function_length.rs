//! No production function is longer than [`LIMIT`] lines unless it says
//! why: a function that long is usually several steps that want names of
//! their own, and a reader who opens it should not have to hold a screen
//! and a half of state in mind.
//!
//! The rule, as `docs/architecture.md` states it: a function or method in
//! a crate's `src/` (the binary's and every library's, build scripts
//! included) spans at most [`LIMIT`] lines from the line of its opening
//! brace to the line of its closing brace. A longer one carries, in the
//! comments and attributes right above its signature, a line
//! `// long: <why>` with a real reason of at least three words (one
//! linear table, one SVG document written top to bottom). Tests are
//! exempt: `#[test]` functions and everything inside a `#[cfg(test)]`
//! module, whose length is the length of what they check.
//!
//! The sources are parsed with `syn` (the whole file, so a function inside
//! an `impl`, a trait's provided method or a nested module is found too).
//! The checker is tested on fixtures: a long function is named, the same
//! function with its reason or inside a test module is not.

use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// The most lines a production function may span without a reason.
const LIMIT: usize = 80;

/// A function longer than [`LIMIT`] with no `// long:` reason.
#[derive(Debug, PartialEq, Eq)]
struct Long {
    /// `path:line` of its `fn`.
    at: String,
    /// Its name.
    name: String,
    /// Lines from its opening to its closing brace.
    lines: usize,
}

/// Collects the functions of one file, skipping tests.
struct Finder<'a> {
    /// The file's lines, to read the comments above a function.
    text: Vec<&'a str>,
    /// The file's path for messages.
    path: &'a str,
    /// Every production function: (`fn` line, name, lines, has a reason).
    found: Vec<(usize, String, usize, bool)>,
}

/// True for `#[test]` and `#[cfg(test)]` (and `#[cfg(all(test, …))]`).
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        let p = a.path();
        if p.is_ident("test") {
            return true;
        }
        if !p.is_ident("cfg") {
            return false;
        }
        let Ok(list) = a.meta.require_list() else {
            return false;
        };
        // `test` as a whole word among the cfg's tokens, not `not(test)`.
        let tokens = list.tokens.to_string();
        tokens
            .split(|c: char| !c.is_alphanumeric() && c != '_')
            .any(|w| w == "test")
            && !tokens.replace(' ', "").contains("not(test)")
    })
}

impl Finder<'_> {
    /// The reason given above the line `fn_line` (1-based): a `// long:`
    /// line of at least three words in the run of comment, attribute and
    /// blank lines that ends right above it.
    fn reason(&self, fn_line: usize) -> bool {
        let mut i = fn_line.saturating_sub(1);
        while i > 0 {
            let l = self.text[i - 1].trim();
            if let Some(why) = l.strip_prefix("// long:") {
                return why.split_whitespace().count() >= 3;
            }
            let above = l.starts_with("//") || l.starts_with("#[") || l.starts_with("#![");
            if !above {
                return false;
            }
            i -= 1;
        }
        false
    }

    fn add(&mut self, attrs: &[syn::Attribute], sig: &syn::Signature, block: &syn::Block) {
        if is_test(attrs) {
            return;
        }
        let open = block.brace_token.span.open().start().line;
        let close = block.brace_token.span.close().end().line;
        // The first line of the item: its first attribute or doc comment
        // is above the `fn`, so the reason is searched from the `fn` up.
        let fn_line = sig.fn_token.span.start().line;
        let reason = self.reason(fn_line);
        self.found
            .push((fn_line, sig.ident.to_string(), close - open + 1, reason));
    }
}

impl<'ast> Visit<'ast> for Finder<'_> {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_test(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        if !is_test(&i.attrs) {
            syn::visit::visit_item_impl(self, i);
        }
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.add(&f.attrs, &f.sig, &f.block);
        if !is_test(&f.attrs) {
            syn::visit::visit_item_fn(self, f);
        }
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.add(&f.attrs, &f.sig, &f.block);
        if !is_test(&f.attrs) {
            syn::visit::visit_impl_item_fn(self, f);
        }
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(block) = &f.default {
            self.add(&f.attrs, &f.sig, block);
            syn::visit::visit_block(self, block);
        }
    }
}

/// The long functions of one source text; `path` names it in messages.
fn long_functions(path: &str, text: &str) -> Vec<Long> {
    let file = syn::parse_file(text).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut f = Finder {
        text: text.lines().collect(),
        path,
        found: Vec::new(),
    };
    f.visit_file(&file);
    f.found
        .iter()
        .filter(|(_, _, lines, reason)| *lines > LIMIT && !reason)
        .map(|(line, name, lines, _)| Long {
            at: format!("{}:{line}", f.path),
            name: name.clone(),
            lines: *lines,
        })
        .collect()
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The production sources of the workspace: every crate's `src/` and
/// build script (tests, examples and benches are not production code).
fn production_sources() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    let mut crates: Vec<PathBuf> = vec![root.to_path_buf()];
    if let Ok(entries) = std::fs::read_dir(root.join("crates")) {
        crates.extend(entries.flatten().map(|e| e.path()));
    }
    for c in crates {
        rust_files(&c.join("src"), &mut files);
        if c.join("build.rs").exists() {
            files.push(c.join("build.rs"));
        }
    }
    files.sort();
    files
}

#[test]
fn no_production_function_is_longer_than_the_limit_without_a_reason() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = production_sources();
    assert!(files.len() > 100, "only {} sources found", files.len());
    let mut long = Vec::new();
    for p in &files {
        let text = std::fs::read_to_string(p).unwrap();
        let rel = p.strip_prefix(root).unwrap_or(p).display().to_string();
        long.extend(long_functions(&rel, &text));
    }
    let list: Vec<String> = long
        .iter()
        .map(|l| format!("  {} {} ({} lines)", l.at, l.name, l.lines))
        .collect();
    assert!(
        long.is_empty(),
        "{} production functions are longer than {LIMIT} lines and give no `// long: <why>` \
         reason above their signature; split them along their seams (docs/architecture.md):\n{}",
        long.len(),
        list.join("\n")
    );
}

/// A function of `n` body lines named `name`, after `above`.
fn fixture_fn(above: &str, name: &str, n: usize) -> String {
    let body: String = (0..n).map(|i| format!("    let _x{i} = {i};\n")).collect();
    format!("{above}fn {name}() {{\n{body}}}\n")
}

#[test]
fn the_checker_names_a_long_function_and_only_it() {
    let text = format!(
        "{}{}",
        fixture_fn("/// Short.\n", "short", LIMIT - 2),
        fixture_fn("/// Long.\n#[inline]\n", "long", LIMIT)
    );
    let found = long_functions("f.rs", &text);
    assert_eq!(
        found,
        vec![Long {
            at: format!("f.rs:{}", LIMIT + 4),
            name: "long".into(),
            lines: LIMIT + 2,
        }]
    );
}

#[test]
fn a_reason_a_test_or_a_test_module_exempts_a_long_function() {
    let reasoned = fixture_fn(
        "/// Long.\n// long: one table of every cause, read top to bottom\n#[rustfmt::skip]\n",
        "table",
        LIMIT + 5,
    );
    assert!(long_functions("f.rs", &reasoned).is_empty());
    // A reason of fewer than three words is no reason.
    let curt = fixture_fn("// long: because\n", "curt", LIMIT + 5);
    assert_eq!(long_functions("f.rs", &curt).len(), 1);
    // A comment separated by code is not the function's.
    let far = format!(
        "// long: this reason belongs to nothing here\nconst A: u8 = 1;\n{}",
        fixture_fn("", "far", LIMIT + 5)
    );
    assert_eq!(long_functions("f.rs", &far).len(), 1);
    let test = fixture_fn("#[test]\n", "a_test", LIMIT + 5);
    assert!(long_functions("f.rs", &test).is_empty());
    let module = format!(
        "#[cfg(test)]\nmod tests {{\n{}}}\n",
        fixture_fn("", "helper", LIMIT + 5)
    );
    assert!(long_functions("f.rs", &module).is_empty());
    // A method in an impl and a trait's provided method count too.
    let method = format!(
        "struct S;\nimpl S {{\n{}}}\ntrait T {{\n{}}}\n",
        fixture_fn("", "method", LIMIT + 5),
        fixture_fn("", "provided", LIMIT + 5)
    );
    let names: Vec<String> = long_functions("f.rs", &method)
        .into_iter()
        .map(|l| l.name)
        .collect();
    assert_eq!(names, ["method", "provided"]);
}
