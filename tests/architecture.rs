//! The architecture holds: no module imports a module that imports it back,
//! in any crate of the workspace; `docs/architecture.md` draws the crate
//! graph `cargo metadata` reports, and lists every module of every crate,
//! each after the modules it imports.
//!
//! The module graph is read from the sources, not from the compiler: every
//! `.rs` file reachable through `mod` declarations from a target (library,
//! binary, test, example, build script) is tokenized (comments and string literals drop out), and every
//! path that names a module of the same crate is an edge from the file that
//! holds it: `use crate::…`, `use super::…`, `use self::…`, `pub use …`,
//! paths through a child module (`html::render`) and paths in code
//! (`crate::sizing::KIB`). Inline modules, `#[cfg(test)] mod tests` included,
//! count as the file that holds them, so a test that imports a module which
//! imports the file back is a circle too. A path that stops at an item of a
//! module (`crate::Error`, `super::Exporter`) is an edge to that module, so a
//! re-export loop (`lib.rs: pub use flush::*;` while `flush.rs` uses
//! `crate::cvt`) is a circle.
//!
//! The engine's `lib.rs` declares its modules lowest first; a test holds
//! it to that (each module, its files and tests, imports only modules
//! declared before it).
//!
//! The checkers are tested on small fixtures: one with a circle of each kind
//! (it must name them all) and one without, whose comments and strings
//! mention the same paths (it must name none).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};

/// A module path inside one crate: `[]` is the crate root.
type ModPath = Vec<String>;

/// One module of a crate: the file that holds it and its children by name.
#[derive(Debug, Default)]
struct Module {
    /// The module of the file that holds this module (itself for a file).
    file: ModPath,
    /// The source file, for messages.
    source: PathBuf,
    /// Child modules by name.
    children: BTreeSet<String>,
    /// Child modules in the order the source declares them.
    declared: Vec<String>,
}

/// A path written in a file, before it is resolved against the module tree.
#[derive(Debug)]
struct Reference {
    /// The module whose code holds the path (inline modules included).
    scope: ModPath,
    /// The path's segments (`crate`, `super`, `self`, names).
    segments: Vec<String>,
    /// The line, for messages.
    line: usize,
}

/// What `use` brought into a scope: names bound to paths, and glob imports.
#[derive(Debug, Default)]
struct Imports {
    /// `use a::b;` binds `b` to `a::b` (`use a::b as c;` binds `c`).
    names: BTreeMap<String, Vec<String>>,
    /// `use a::*;` makes the children of `a` nameable.
    globs: Vec<Vec<String>>,
}

/// The modules of one crate and the paths written in them.
#[derive(Debug, Default)]
struct Crate {
    modules: BTreeMap<ModPath, Module>,
    references: Vec<Reference>,
    imports: BTreeMap<ModPath, Imports>,
}

/// An edge between two files' modules, with the line that makes it.
#[derive(Debug, Clone)]
struct Edge {
    line: usize,
    path: String,
}

impl Crate {
    /// Reads the crate whose root file is `root` (`lib.rs` or `main.rs`).
    fn read(root: &Path) -> Result<Crate, String> {
        let mut krate = Crate::default();
        krate.read_file(root, Vec::new(), root.parent().unwrap().to_path_buf(), None)?;
        Ok(krate)
    }

    /// Reads one file as module `path`; its children's files are in `dir`.
    /// `fold_into` makes it count as another file (an out-of-line test module).
    fn read_file(
        &mut self,
        file: &Path,
        path: ModPath,
        dir: PathBuf,
        fold_into: Option<ModPath>,
    ) -> Result<(), String> {
        let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
        let tokens: TokenStream = text
            .parse()
            .map_err(|e| format!("{}: cannot tokenize: {e:?}", file.display()))?;
        let file_module = fold_into.unwrap_or_else(|| path.clone());
        self.modules.insert(
            path.clone(),
            Module {
                file: file_module.clone(),
                source: file.to_path_buf(),
                ..Module::default()
            },
        );
        let mut declared = Vec::new();
        self.walk(tokens, &path, &file_module, file, &mut declared);
        for Declared {
            name,
            cfg_test,
            path_attr,
        } in declared
        {
            let candidates = match path_attr {
                // `#[path = "…"]`: relative to the declaring file's folder.
                Some(p) => vec![file.parent().unwrap().join(p)],
                None => vec![
                    dir.join(format!("{name}.rs")),
                    dir.join(&name).join("mod.rs"),
                ],
            };
            let child_file = candidates
                .iter()
                .find(|p| p.is_file())
                .ok_or_else(|| format!("{}: module `{name}` has no file", file.display()))?;
            let child_dir = if child_file.ends_with("mod.rs") {
                child_file.parent().unwrap().to_path_buf()
            } else {
                child_file.with_extension("")
            };
            let mut child_path = path.clone();
            child_path.push(name);
            let fold = cfg_test.then(|| file_module.clone());
            self.read_file(child_file, child_path, child_dir, fold)?;
        }
        Ok(())
    }

    /// Walks the tokens of module `scope`, recording child modules,
    /// `use` trees and paths; out-of-line `mod x;` go to `declared`.
    fn walk(
        &mut self,
        tokens: TokenStream,
        scope: &ModPath,
        file_module: &ModPath,
        file: &Path,
        declared: &mut Vec<Declared>,
    ) {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        let mut cfg_test = false;
        let mut path_attr = None;
        let mut i = 0;
        while i < tokens.len() {
            match &tokens[i] {
                TokenTree::Punct(p) if p.as_char() == '#' => {
                    if let Some(TokenTree::Group(g)) = tokens.get(i + 1) {
                        if g.delimiter() == Delimiter::Bracket {
                            let attr: String = g.stream().to_string().split_whitespace().collect();
                            cfg_test |= attr == "cfg(test)";
                            if let Some(lit) = attr.strip_prefix("path=") {
                                path_attr = Some(lit.trim_matches('"').to_string());
                            }
                            i += 2;
                            continue;
                        }
                    }
                }
                TokenTree::Ident(id) if id == "mod" => {
                    if let Some(TokenTree::Ident(name)) = tokens.get(i + 1) {
                        let name = name.to_string();
                        self.add_child(scope, &name);
                        match tokens.get(i + 2) {
                            Some(TokenTree::Group(body))
                                if body.delimiter() == Delimiter::Brace =>
                            {
                                let mut inner = scope.clone();
                                inner.push(name);
                                self.modules.insert(
                                    inner.clone(),
                                    Module {
                                        file: file_module.clone(),
                                        source: file.to_path_buf(),
                                        ..Module::default()
                                    },
                                );
                                self.walk(body.stream(), &inner, file_module, file, declared);
                                i += 3;
                                cfg_test = false;
                                continue;
                            }
                            _ => declared.push(Declared {
                                name,
                                cfg_test,
                                path_attr: path_attr.take(),
                            }),
                        }
                    }
                }
                TokenTree::Ident(id) if id == "pub" => {
                    // `pub(in crate::io)` restricts visibility, it imports nothing.
                    if let Some(TokenTree::Group(g)) = tokens.get(i + 1) {
                        if g.delimiter() == Delimiter::Parenthesis {
                            i += 2;
                            continue;
                        }
                    }
                }
                TokenTree::Ident(id) if id == "use" => {
                    let line = id.span().start().line;
                    let end = (i + 1..tokens.len())
                        .find(|&j| matches!(&tokens[j], TokenTree::Punct(p) if p.as_char() == ';'))
                        .unwrap_or(tokens.len());
                    let mut trees = Vec::new();
                    use_tree(&tokens[i + 1..end], Vec::new(), &mut trees);
                    for (segments, binding) in trees {
                        let imports = self.imports.entry(scope.clone()).or_default();
                        match binding {
                            Binding::Name(name) => {
                                imports.names.insert(name, segments.clone());
                            }
                            Binding::Glob => imports.globs.push(segments.clone()),
                            Binding::None => {}
                        }
                        self.references.push(Reference {
                            scope: scope.clone(),
                            segments,
                            line,
                        });
                    }
                    i = end + 1;
                    cfg_test = false;
                    continue;
                }
                TokenTree::Ident(first) => {
                    let after_colons = i > 1 && is_colons(&tokens, i - 2);
                    if !after_colons && is_colons(&tokens, i + 1) {
                        let (segments, next) = path_at(&tokens, i);
                        let line = first.span().start().line;
                        self.references.push(Reference {
                            scope: scope.clone(),
                            segments,
                            line,
                        });
                        i = next;
                        cfg_test = false;
                        continue;
                    }
                }
                TokenTree::Group(g) => {
                    self.walk(g.stream(), scope, file_module, file, declared);
                }
                _ => {}
            }
            if !matches!(&tokens[i], TokenTree::Ident(id) if id == "pub") {
                cfg_test = false;
                path_attr = None;
            }
            i += 1;
        }
    }

    fn add_child(&mut self, scope: &ModPath, name: &str) {
        if let Some(m) = self.modules.get_mut(scope) {
            if m.children.insert(name.to_string()) {
                m.declared.push(name.to_string());
            }
        }
    }

    /// The module a path names: the deepest module it walks through.
    fn resolve(&self, scope: &ModPath, segments: &[String], depth: usize) -> Option<ModPath> {
        let first = segments.first()?;
        let (mut node, rest): (ModPath, &[String]) = match first.as_str() {
            "crate" | "$crate" => (Vec::new(), &segments[1..]),
            "self" => (scope.clone(), &segments[1..]),
            "super" => {
                let mut node = scope.clone();
                let mut k = 0;
                while segments.get(k).is_some_and(|s| s == "super") {
                    node.pop()?;
                    k += 1;
                }
                (node, &segments[k..])
            }
            name if self
                .modules
                .get(scope)
                .is_some_and(|m| m.children.contains(name)) =>
            {
                (scope.clone(), segments)
            }
            name => {
                let imports = self.imports.get(scope)?;
                if depth > 8 {
                    return None;
                }
                if let Some(bound) = imports.names.get(name) {
                    if bound.len() == 1 && bound[0] == name {
                        return None;
                    }
                    let mut full = bound.clone();
                    full.extend_from_slice(&segments[1..]);
                    return self.resolve(scope, &full, depth + 1);
                }
                let glob = imports.globs.iter().find_map(|g| {
                    let base = self.resolve(scope, g, depth + 1)?;
                    let has = self.modules.get(&base)?.children.contains(name);
                    has.then_some(base)
                })?;
                (glob, segments)
            }
        };
        for segment in rest {
            let mut child = node.clone();
            child.push(segment.clone());
            if !self.modules.contains_key(&child) {
                break;
            }
            node = child;
        }
        Some(node)
    }

    /// Edges between files' modules: `from → to → (line, path)`.
    fn edges(&self) -> BTreeMap<ModPath, BTreeMap<ModPath, Edge>> {
        let mut edges: BTreeMap<ModPath, BTreeMap<ModPath, Edge>> = BTreeMap::new();
        for r in &self.references {
            let Some(target) = self.resolve(&r.scope, &r.segments, 0) else {
                continue;
            };
            let from = &self.modules[&r.scope].file;
            let to = &self.modules[&target].file;
            if from != to {
                edges
                    .entry(from.clone())
                    .or_default()
                    .entry(to.clone())
                    .or_insert(Edge {
                        line: r.line,
                        path: r.segments.join("::"),
                    });
            }
        }
        edges
    }

    /// Every import circle: the modules tied together (a strongly connected
    /// component) and the shortest circle through them, smallest first.
    fn circles(&self) -> Vec<(Vec<ModPath>, Vec<ModPath>)> {
        let edges = self.edges();
        let nodes: Vec<ModPath> = self.modules.keys().cloned().collect();
        let mut circles = Vec::new();
        for component in strongly_connected(&nodes, &edges) {
            if component.len() > 1 {
                let circle = shortest_cycle(&component, &edges);
                circles.push((component, circle));
            }
        }
        circles.sort_by_key(|(component, circle)| (component.len(), circle.clone()));
        circles
    }

    /// Every import of a module the crate root declares after the
    /// importer's own top module (a file of a directory module counts as
    /// that module, an inline test module as its file), as a sentence with
    /// the file, line and path behind it; one per pair of modules.
    fn declared_after(&self) -> Vec<String> {
        let order = &self.modules[&ModPath::new()].declared;
        let position = |m: &String| order.iter().position(|o| o == m);
        let mut wrong = BTreeMap::new();
        for (from, tos) in self.edges() {
            for (to, edge) in tos {
                let (Some(a), Some(b)) = (from.first(), to.first()) else {
                    continue;
                };
                if a != b && position(b) > position(a) {
                    wrong.entry((a.clone(), b.clone())).or_insert_with(|| {
                        format!(
                            "`{a}` imports `{b}`, declared after it: {}:{} uses `{}`",
                            relative(&self.modules[&from].source).display(),
                            edge.line,
                            edge.path
                        )
                    });
                }
            }
        }
        wrong.into_values().collect()
    }

    /// One circle in words: each step with the file, line and path behind it.
    fn describe(
        &self,
        crate_name: &str,
        (component, circle): &(Vec<ModPath>, Vec<ModPath>),
    ) -> String {
        let edges = self.edges();
        let name = |m: &ModPath| {
            if m.is_empty() {
                format!("{crate_name} (crate root)")
            } else {
                m.join("::")
            }
        };
        let mut text = format!(
            "{crate_name}: {}",
            circle
                .iter()
                .chain(circle.first())
                .map(name)
                .collect::<Vec<_>>()
                .join(" → ")
        );
        if component.len() > circle.len() {
            let others: Vec<String> = component
                .iter()
                .filter(|m| !circle.contains(m))
                .map(name)
                .collect();
            text.push_str(&format!(" (also in this knot: {})", others.join(", ")));
        }
        for (k, from) in circle.iter().enumerate() {
            let to = &circle[(k + 1) % circle.len()];
            let edge = &edges[from][to];
            text.push_str(&format!(
                "\n    {}:{} uses `{}`",
                relative(&self.modules[from].source).display(),
                edge.line,
                edge.path
            ));
        }
        text
    }
}

/// `path` from the workspace root when it is below it (messages stay short).
fn relative(path: &Path) -> &Path {
    path.strip_prefix(env!("CARGO_MANIFEST_DIR"))
        .unwrap_or(path)
}

/// An out-of-line `mod name;` and what its attributes say.
struct Declared {
    name: String,
    /// `#[cfg(test)]`: it counts as the declaring file.
    cfg_test: bool,
    /// `#[path = "…"]`, as written.
    path_attr: Option<String>,
}

/// What a `use` tree leaf binds in the scope.
enum Binding {
    Name(String),
    Glob,
    None,
}

/// Expands a `use` tree into full paths and what each binds.
fn use_tree(tokens: &[TokenTree], prefix: Vec<String>, out: &mut Vec<(Vec<String>, Binding)>) {
    let mut path = prefix;
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            TokenTree::Ident(id) if id == "as" => {
                let binding = match tokens.get(i + 1) {
                    Some(TokenTree::Ident(alias)) if alias != "_" => {
                        Binding::Name(alias.to_string())
                    }
                    _ => Binding::None,
                };
                out.push((path, binding));
                return;
            }
            TokenTree::Ident(id) => path.push(id.to_string()),
            TokenTree::Punct(p) if p.as_char() == '*' => {
                out.push((path, Binding::Glob));
                return;
            }
            TokenTree::Punct(p) if p.as_char() == '$' => {
                // `$crate` in a macro: the next ident is `crate`.
                if let Some(TokenTree::Ident(id)) = tokens.get(i + 1) {
                    path.push(format!("${id}"));
                    i += 1;
                }
            }
            TokenTree::Group(g) if g.delimiter() == Delimiter::Brace => {
                let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                for item in inner.split(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ','))
                {
                    if item.is_empty() {
                        continue;
                    }
                    if let [TokenTree::Ident(id)] = item {
                        if id == "self" {
                            let binding = Binding::Name(path.last().cloned().unwrap_or_default());
                            out.push((path.clone(), binding));
                            continue;
                        }
                    }
                    use_tree(item, path.clone(), out);
                }
                return;
            }
            _ => {}
        }
        i += 1;
    }
    if let Some(last) = path.last().cloned() {
        out.push((path, Binding::Name(last)));
    }
}

/// Whether `tokens[i..]` starts with `::`.
fn is_colons(tokens: &[TokenTree], i: usize) -> bool {
    matches!(
        (tokens.get(i), tokens.get(i + 1)),
        (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
            if a.as_char() == ':' && a.spacing() == Spacing::Joint && b.as_char() == ':'
    )
}

/// The path `a::b::c` starting at `tokens[i]`, and the index after it.
fn path_at(tokens: &[TokenTree], mut i: usize) -> (Vec<String>, usize) {
    let mut segments = Vec::new();
    let dollar = i > 0 && matches!(&tokens[i - 1], TokenTree::Punct(p) if p.as_char() == '$');
    while let Some(TokenTree::Ident(id)) = tokens.get(i) {
        let id = id.to_string();
        segments.push(if dollar && segments.is_empty() {
            format!("${id}")
        } else {
            id
        });
        if !is_colons(tokens, i + 1) {
            return (segments, i + 1);
        }
        i += 3;
    }
    (segments, i)
}

/// Tarjan's strongly connected components.
fn strongly_connected(
    nodes: &[ModPath],
    edges: &BTreeMap<ModPath, BTreeMap<ModPath, Edge>>,
) -> Vec<Vec<ModPath>> {
    struct State<'a> {
        edges: &'a BTreeMap<ModPath, BTreeMap<ModPath, Edge>>,
        index: BTreeMap<ModPath, usize>,
        low: BTreeMap<ModPath, usize>,
        stack: Vec<ModPath>,
        on_stack: BTreeSet<ModPath>,
        out: Vec<Vec<ModPath>>,
    }
    fn visit(s: &mut State, v: &ModPath) {
        let n = s.index.len();
        s.index.insert(v.clone(), n);
        s.low.insert(v.clone(), n);
        s.stack.push(v.clone());
        s.on_stack.insert(v.clone());
        let next: Vec<ModPath> = s
            .edges
            .get(v)
            .map(|e| e.keys().cloned().collect())
            .unwrap_or_default();
        for w in next {
            if !s.index.contains_key(&w) {
                visit(s, &w);
                let low = s.low[v].min(s.low[&w]);
                s.low.insert(v.clone(), low);
            } else if s.on_stack.contains(&w) {
                let low = s.low[v].min(s.index[&w]);
                s.low.insert(v.clone(), low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on_stack.remove(&w);
                let done = &w == v;
                component.push(w);
                if done {
                    break;
                }
            }
            s.out.push(component);
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in nodes {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

/// The shortest cycle through the smallest module of a component.
fn shortest_cycle(
    component: &[ModPath],
    edges: &BTreeMap<ModPath, BTreeMap<ModPath, Edge>>,
) -> Vec<ModPath> {
    let inside: BTreeSet<&ModPath> = component.iter().collect();
    let start = component.iter().min().unwrap().clone();
    let mut previous: BTreeMap<ModPath, ModPath> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start.clone()]);
    while let Some(v) = queue.pop_front() {
        for w in edges.get(&v).into_iter().flat_map(|e| e.keys()) {
            if !inside.contains(w) || previous.contains_key(w) {
                continue;
            }
            previous.insert(w.clone(), v.clone());
            if *w == start {
                let mut cycle = vec![v.clone()];
                while *cycle.last().unwrap() != start {
                    let back = previous[cycle.last().unwrap()].clone();
                    cycle.push(back);
                }
                cycle.reverse();
                return cycle;
            }
            queue.push_back(w.clone());
        }
    }
    unreachable!("a strongly connected component has a cycle through each of its modules")
}

/// `cargo metadata --no-deps` of the workspace.
fn metadata() -> serde_json::Value {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON")
}

/// Which targets' sources to read.
#[derive(Clone, Copy, PartialEq)]
enum Targets {
    /// Libraries and binaries: the crates the document describes.
    Code,
    /// Those, and every test, bench, example and build script (each its
    /// own crate, named `package (kind name)`).
    All,
}

/// The roots of the workspace's targets: (crate name, root file).
fn workspace_roots(which: Targets) -> Vec<(String, PathBuf)> {
    let meta = metadata();
    let mut roots = BTreeSet::new();
    for package in meta["packages"].as_array().unwrap() {
        let package_name = package["name"].as_str().unwrap();
        for target in package["targets"].as_array().unwrap() {
            let kind = target["kind"][0].as_str().unwrap_or_default();
            let code = matches!(kind, "lib" | "rlib" | "cdylib" | "staticlib" | "bin");
            let name = if code {
                package_name.to_string()
            } else {
                format!(
                    "{package_name} ({kind} {})",
                    target["name"].as_str().unwrap_or_default()
                )
            };
            if code || which == Targets::All {
                roots.insert((name, PathBuf::from(target["src_path"].as_str().unwrap())));
            }
        }
    }
    roots.into_iter().collect()
}

/// The workspace's crates and their normal dependencies on each other, from
/// `cargo metadata`: `crate → (required, optional)`.
type CrateGraph = BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)>;

fn metadata_graph() -> CrateGraph {
    let meta = metadata();
    let packages = meta["packages"].as_array().unwrap();
    let names: BTreeSet<&str> = packages
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    let mut graph = CrateGraph::new();
    for p in packages {
        let entry = graph
            .entry(p["name"].as_str().unwrap().to_string())
            .or_default();
        for d in p["dependencies"].as_array().unwrap() {
            let name = d["name"].as_str().unwrap();
            if !names.contains(name) || !d["kind"].is_null() {
                continue;
            }
            if d["optional"].as_bool() == Some(true) {
                entry.1.insert(name.to_string());
            } else {
                entry.0.insert(name.to_string());
            }
        }
    }
    graph
}

/// The text of `docs/architecture.md`.
fn architecture_md() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The workspace crate names in `text`, in order (`rtrec`, `rtrec-sys`, …).
fn crate_names(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(at) = text[i..].find("rtrec") {
        let start = i + at;
        let mut end = start + "rtrec".len();
        while end < bytes.len() && (bytes[end].is_ascii_lowercase() || bytes[end] == b'-') {
            end += 1;
        }
        let before_ok =
            start == 0 || !(bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_');
        let after_ok =
            end >= bytes.len() || !(bytes[end] == b'_' || bytes[end] == b'.' || bytes[end] == b'/');
        if before_ok && after_ok {
            names.push(text[start..end].trim_end_matches('-').to_string());
        }
        i = end;
    }
    names
}

/// The crate graph drawn in the document's `## Crates` section: its first
/// `text` block, one line `A ──► B, C` per crate (names after `optional`
/// are optional dependencies) and one line `A, B: no workspace
/// dependencies`.
fn documented_graph(doc: &str) -> CrateGraph {
    let section = &doc[doc.find("\n## Crates").expect("a `## Crates` section")..];
    let block = section
        .split("```text\n")
        .nth(1)
        .expect("a text block in `## Crates`");
    let block = &block[..block.find("```").expect("the text block ends")];
    let mut graph = CrateGraph::new();
    for line in block.lines().filter(|l| !l.trim().is_empty()) {
        if let Some((left, right)) = line.split_once("──►") {
            let from = crate_names(left);
            assert_eq!(from.len(), 1, "one crate left of the arrow: {line:?}");
            let (required, optional) = right.split_once("optional").unwrap_or((right, ""));
            let entry = graph.entry(from[0].clone()).or_default();
            entry.0.extend(crate_names(required));
            entry.1.extend(crate_names(optional));
        } else if let Some((left, _)) = line.split_once(": no workspace dependencies") {
            for name in crate_names(left) {
                graph.entry(name).or_default();
            }
        } else {
            panic!("a line of the crate graph is neither `A ──► B, C` nor `A: no workspace dependencies`: {line:?}");
        }
    }
    graph
}

#[test]
fn the_crate_graph_in_the_architecture_document_is_cargo_metadatas() {
    let documented = documented_graph(&architecture_md());
    let actual = metadata_graph();
    assert!(
        actual.len() >= 9,
        "cargo metadata lists the workspace: {actual:?}"
    );
    let show = |g: &CrateGraph| {
        g.iter()
            .map(|(c, (r, o))| format!("  {c} ──► {r:?} optional {o:?}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(
        documented == actual,
        "docs/architecture.md's crate graph differs from cargo metadata.\ndocument:\n{}\ncargo metadata:\n{}",
        show(&documented),
        show(&actual)
    );
}

#[test]
fn the_documents_crate_graph_parser_reads_every_kind_of_line() {
    let doc = "intro\n## Crates\n\n```text\n\
               rtrec (binary) ──► rtrec-engine, rtrec-sys; optional: rtrec-bench\n\
               rtrec-engine   ──► rtrec-sys          (librtrec.so for C)\n\
               rtrec-bench    ──► rtrec-engine\n\
               rtrec-sys, rtrec-units: no workspace dependencies\n```\n\n\
               ```text\nrtrec-other ──► rtrec-sys\n```\n";
    let graph = documented_graph(doc);
    let set = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<BTreeSet<_>>();
    let expected: CrateGraph = [
        (
            "rtrec",
            (set(&["rtrec-engine", "rtrec-sys"]), set(&["rtrec-bench"])),
        ),
        ("rtrec-engine", (set(&["rtrec-sys"]), set(&[]))),
        ("rtrec-bench", (set(&["rtrec-engine"]), set(&[]))),
        ("rtrec-sys", (set(&[]), set(&[]))),
        ("rtrec-units", (set(&[]), set(&[]))),
    ]
    .into_iter()
    .map(|(c, deps)| (c.to_string(), deps))
    .collect();
    assert_eq!(
        graph, expected,
        "librtrec.so is not a crate; the second block is not the graph"
    );
}

/// The modules `docs/architecture.md` lists for `krate` under `## Modules`,
/// in order: the first column of its table, or else every backticked name
/// of its paragraph (`export/` is `export`).
fn documented_modules(doc: &str, krate: &str) -> Vec<String> {
    let start = doc.find("\n## Modules").expect("a `## Modules` section");
    let section = &doc[start + 1..];
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    let heading = if krate == "rtrec" {
        "**rtrec (src/)**".to_string()
    } else {
        format!("**{krate}**")
    };
    let Some(at) = section.find(&heading) else {
        return Vec::new();
    };
    let text = &section[at + heading.len()..];
    let text = &text[..text.find("\n**rtrec").unwrap_or(text.len())];
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with('|'))
        .skip(2)
        .collect();
    let spans: Vec<&str> = if rows.is_empty() {
        text.split('`').skip(1).step_by(2).collect()
    } else {
        rows.iter().filter_map(|r| r.split('`').nth(1)).collect()
    };
    spans
        .iter()
        .map(|s| s.trim_end_matches('/').to_string())
        .collect()
}

#[test]
fn the_architecture_document_lists_every_module_lowest_first() {
    let doc = architecture_md();
    let mut wrong = Vec::new();
    for (name, root) in workspace_roots(Targets::Code) {
        let krate = Crate::read(&root).unwrap_or_else(|e| panic!("{name}: {e}"));
        let modules: BTreeSet<String> = krate
            .modules
            .iter()
            .filter(|(path, m)| path.len() == 1 && m.file == **path)
            .map(|(path, _)| path[0].clone())
            .collect();
        let mut listed: Vec<String> = Vec::new();
        for m in documented_modules(&doc, &name) {
            if modules.contains(&m) && !listed.contains(&m) {
                listed.push(m);
            }
        }
        for m in modules.iter().filter(|m| !listed.contains(m)) {
            wrong.push(format!("{name}: module `{m}` is not listed"));
        }
        let position = |m: &str| listed.iter().position(|l| l == m);
        for (from, tos) in krate.edges() {
            for to in tos.keys() {
                let (Some(a), Some(b)) = (from.first(), to.first()) else {
                    continue;
                };
                if a != b && position(b) > position(a) {
                    wrong.push(format!("{name}: `{a}` imports `{b}`, listed after it"));
                }
            }
        }
    }
    wrong.dedup();
    assert!(
        wrong.is_empty(),
        "docs/architecture.md, `## Modules, lowest first`:\n{}",
        wrong.join("\n")
    );
}

/// `crates/engine/src/lib.rs` says its modules are declared lowest first;
/// this holds it to that.
#[test]
fn the_engine_declares_each_module_after_the_modules_it_imports() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/engine/src/lib.rs");
    let krate = Crate::read(&root).unwrap_or_else(|e| panic!("{e}"));
    let wrong = krate.declared_after();
    assert!(
        wrong.is_empty(),
        "crates/engine/src/lib.rs declares its modules lowest first (each imports only \
         modules declared before it); move a `mod` line below the modules it imports:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_order_checker_names_an_import_of_a_module_declared_later() {
    let dir = fixture(&[
        ("lib.rs", "mod base;\nmod io;\nmod writer;\n"),
        ("base.rs", "pub struct Base;\n"),
        ("io/mod.rs", "mod direct;\nuse crate::base::Base;\n"),
        ("io/direct.rs", "use super::super::base::Base;\n"),
        // Only a test of a directory module's child imports `io`.
        ("writer/mod.rs", "mod pack;\nuse crate::base::Base;\n"),
        (
            "writer/pack.rs",
            "pub struct Pack;\n#[cfg(test)]\nmod tests {\n    use crate::io;\n}\n",
        ),
    ]);
    let read = || Crate::read(&dir.path().join("src/lib.rs")).unwrap();
    assert_eq!(read().declared_after(), Vec::<String>::new());
    // The control: `writer` declared above `io`.
    std::fs::write(
        dir.path().join("src/lib.rs"),
        "mod base;\nmod writer;\nmod io;\n",
    )
    .unwrap();
    let wrong = read().declared_after();
    assert_eq!(wrong.len(), 1, "{wrong:?}");
    assert!(
        wrong[0].starts_with("`writer` imports `io`, declared after it: ")
            && wrong[0].ends_with("writer/pack.rs:4 uses `crate::io`"),
        "{}",
        wrong[0]
    );
}

#[test]
fn no_module_imports_a_module_that_imports_it_back() {
    let roots = workspace_roots(Targets::All);
    assert!(
        roots.len() >= 9,
        "cargo metadata lists the workspace's targets: {roots:?}"
    );
    let mut circles = Vec::new();
    for (name, root) in &roots {
        let krate = Crate::read(root).unwrap_or_else(|e| panic!("{name}: {e}"));
        for knot in krate.circles() {
            circles.push(krate.describe(name, &knot));
        }
    }
    assert!(
        circles.is_empty(),
        "{} import circle(s); put the shared type in a module below both:\n{}",
        circles.len(),
        circles.join("\n")
    );
}

/// Writes a fixture crate: `files` are (path under src/, text).
fn fixture(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join("src").join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

/// The circles of a fixture, as module names joined by ` → `.
fn fixture_circles(dir: &Path) -> Vec<String> {
    let krate = Crate::read(&dir.join("src/lib.rs")).unwrap();
    krate
        .circles()
        .iter()
        .map(|(_, c)| {
            c.iter()
                .map(|m| {
                    if m.is_empty() {
                        "root".into()
                    } else {
                        m.join("::")
                    }
                })
                .collect::<Vec<_>>()
                .join(" → ")
        })
        .collect()
}

#[test]
fn the_checker_finds_a_circle_of_each_kind() {
    let dir = fixture(&[
        (
            "lib.rs",
            "mod model; mod profile; mod queue; mod timing; pub mod export; mod plot; mod flush;\n\
             pub use flush::*;\n",
        ),
        // A plain `use crate::` pair.
        ("model.rs", "use crate::profile::Profile;\npub fn transfer_ns() {}\n"),
        ("profile.rs", "pub struct Profile;\nfn f() { crate::model::transfer_ns(); }\n"),
        // Only the test module closes this one.
        ("queue.rs", "use crate::timing::Timing;\npub enum Kind {}\n"),
        ("timing.rs", "pub struct Timing;\n#[cfg(test)]\nmod tests {\n    use crate::queue::{self, Kind};\n}\n"),
        // A three-step circle through a child module and `super::`.
        ("export/mod.rs", "mod html;\npub trait Exporter {}\npub use html::Html;\n"),
        ("export/html.rs", "use crate::plot;\npub struct Html;\n"),
        ("plot.rs", "use crate::export::Exporter;\n"),
        // A re-export loop through the crate root.
        ("flush.rs", "use crate::cvt;\npub fn cvt() {}\n"),
    ]);
    let circles = fixture_circles(dir.path());
    assert_eq!(
        circles,
        [
            "root → flush",
            "model → profile",
            "queue → timing",
            "export → export::html → plot",
        ],
        "each circle of the fixture, and nothing else"
    );
}

#[test]
fn the_checker_ignores_comments_strings_and_one_way_imports() {
    let dir = fixture(&[
        ("lib.rs", "mod base; mod a; mod b; mod io;\npub use a::A;\n"),
        // A visibility restricted to the parent imports nothing from it.
        ("io/mod.rs", "mod gather;\npub use gather::Gather;\n"),
        (
            "io/gather.rs",
            "pub struct Gather;\npub(in crate::io) fn check() {}\n",
        ),
        ("base.rs", "pub struct Base;\n"),
        ("a.rs", "use crate::base::Base;\npub struct A;\n"),
        (
            "b.rs",
            "//! Uses `crate::a`, never the other way.\n\
             use super::base;\nuse crate::a::A;\n\
             // use crate::b; and crate::lib in a comment\n\
             fn f() -> &'static str { \"crate::b::f\" }\n\
             fn g() -> char { '\"' }\n\
             #[cfg(test)]\nmod tests { use super::*; }\n",
        ),
    ]);
    assert_eq!(fixture_circles(dir.path()), Vec::<String>::new());
    // The control: the same fixture with one edge back is caught.
    std::fs::write(
        dir.path().join("src/base.rs"),
        "pub struct Base;\nfn f() { crate::b::g(); }\n",
    )
    .unwrap();
    assert_eq!(fixture_circles(dir.path()), ["a → base → b"]);
}
